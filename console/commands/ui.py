"""``ussd-console`` (no sub-command) or ``ussd-console console``: the operator console."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys

from console.errors import CommandError
from core.i18n import _
from core.alerts import load_alerts_config
from core.config import load_console_config, load_inbox_config, load_log_config
from core.home import LOG_FORMAT, Home, private_folder
from core.ops.logfile import RotatingLog

from .common import with_examples
from .options import common_parser


def register(sub, common) -> None:
    # The console and the demo print no results: no --json.
    p = sub.add_parser("console", parents=[common_parser(json=False)], help=_("open the operator console (the default)"),
                       **with_examples("ussd-console --home /srv/ussd console",
                                       "ussd-console console --no-inbox    while `watch` takes the inbox"))
    p.add_argument("--no-inbox", action="store_true",
                   help=_("show the store without taking files from the inbox (another process does)"))
    p.set_defaults(handler=cmd_console)


def served() -> bool:
    """Run by ``serve`` for a browser session: textual-serve's web driver talks over pipes."""
    return os.environ.get("TEXTUAL_DRIVER", "").endswith(":WebDriver")


def need_terminal() -> None:
    """A terminal, or textual-serve's web driver (``serve``)."""
    if served():
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CommandError.told(_("the console needs a terminal; from scripts use a sub-command "
                                  "(status, cases, ranking, ...), see --help"))


@contextlib.contextmanager
def logs_to_file(home: Home):
    """While the console owns the terminal, log lines go to ``<home>/logs`` and never to the screen."""
    private_folder(home.logs)
    logs = load_log_config(home.config)
    handler = RotatingLog(home.log_file, logs.max_bytes, logs.backups, report_failures=False)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    ours = logging.getLogger("ussd")
    hidden = [h for h in root.handlers if isinstance(h, logging.StreamHandler)
              and not isinstance(h, logging.FileHandler)]
    for h in hidden:
        root.removeHandler(h)
    root.addHandler(handler)
    level = ours.level
    ours.setLevel(logging.INFO)
    try:
        yield
    finally:
        ours.setLevel(level)
        root.removeHandler(handler)
        handler.close()
        for h in hidden:
            root.addHandler(h)


def open_console(ctx, inbox: bool = True) -> int:
    need_terminal()
    ctx.writes = inbox  # taking in the inbox writes; --no-inbox only reads
    home = ctx.open_home()
    config = load_inbox_config(home.config)  # a bad setting is one line here, not a broken screen
    console_config = load_console_config(home.config)
    from console.actions import check_keymap

    # The ids and clashes of [console.keys] against the actions table: one line here, not a broken screen.
    keys = check_keymap(console_config.keys, where=f"{home.config} [console.keys]")
    alerts = load_alerts_config(home.config)
    load_log_config(home.config)
    _ = ctx.receiver  # open and migrate the store here too, for the same reason
    ctx.close()
    from console.app import ConsoleApp, inbox_service

    app = ConsoleApp(
        home,
        service_factory=functools.partial(inbox_service, config=config, store_target=ctx.store_target,
                                          alerts=alerts) if inbox else None,
        evict_every=config.evict_every,
        store_target=ctx.store_target,
        unlock_minutes=console_config.unlock_minutes,
        keys=keys,
    )
    if inbox:
        from core.inbox.writers import ignore_lease_breaks

        ignore_lease_breaks()
    if served():  # a browser session ends with its serve, even one killed
        from console.web.sessions import exit_with_parent, serve_pid

        exit_with_parent(serve_pid())
    with logs_to_file(home):
        app.run()
    return app.return_code or 0


def cmd_console(args, ctx) -> int:
    return open_console(ctx, inbox=not args.no_inbox)
