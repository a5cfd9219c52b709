"""``ussd-console`` (no sub-command) or ``ussd-console console``: the operator console."""

from __future__ import annotations

import sys

from ..errors import CommandError


def register(sub, common) -> None:
    p = sub.add_parser("console", parents=[common], help="open the operator console (the default)")
    p.add_argument("--no-inbox", action="store_true",
                   help="show the store without taking files from the inbox (another process does)")
    p.set_defaults(handler=cmd_console)


def need_terminal() -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CommandError("the console needs a terminal; from scripts use a sub-command "
                           "(status, cases, ranking, ...), see --help")


def open_console(ctx, inbox: bool = True) -> int:
    need_terminal()
    _ = ctx.receiver  # open and migrate the store here: a bad store is one line, not a screen
    ctx.close()
    from ..app import ConsoleApp, inbox_service

    ConsoleApp(ctx.home, service_factory=inbox_service if inbox else None).run()
    return 0


def cmd_console(args, ctx) -> int:
    return open_console(ctx, inbox=not args.no_inbox)
