"""``ussd-console serve``: the operator console in a browser, through ``textual-serve``.

Each browser session runs its own ``ussd-console console`` process behind a
web socket. The server listens on the loopback address unless ``--public``
says otherwise; reach it through an SSH tunnel (docs/serve-security.md). The
guard in ``console/web/guard.py`` answers only requests for the served
address from the page's own origin, caps the sessions (``--max-sessions``,
``[serve] max_sessions``) and, with ``--public``, asks for a login token
first. A ``--db`` store reaches the sessions through ``$USSD_CONSOLE_DB``,
never their command line (where any local user could read its password).
When serve stops (SIGTERM, Ctrl-C) it ends every session first, and a session whose serve
is gone (killed) quits by itself: no console is left running (``console/web/sessions.py``).
The page is ``console/web/app_index.html``: textual-serve's own, with its
web-font link replaced by the font files textual-serve ships, so it fetches
nothing from outside the machine.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import shlex
import sys
from pathlib import Path

from console.errors import CommandError
from core import i18n
from core.config import read_toml
from core.i18n import _

from .common import with_examples

TEMPLATES = Path(__file__).resolve().parent.parent / "web"
DEFAULT_PORT = 8566
SERVE_KEYS = ("max_sessions",)  # the settings of [serve] in config.toml
DEFAULT_MAX_SESSIONS = 3
MAX_SESSIONS_LIMIT = 50  # each session is a console process of its own (about 70 MB)
MIN_TOKEN = 16  # characters a --token-file token needs at least


def register(sub, common) -> None:
    url = f"http://127.0.0.1:{DEFAULT_PORT}"
    p = sub.add_parser("serve", parents=[common],
                       help=_("the console in a browser at %(url)s (reach it through an SSH tunnel)", url=url),
                       **with_examples("ussd-console serve",
                                       f"ssh -L {DEFAULT_PORT}:127.0.0.1:{DEFAULT_PORT} receiver   "
                                       + _("(then, on your machine, %(url)s)", url=url),
                                       "ussd-console serve --public --host 0.0.0.0 --public-url https://ussd.example.org "
                                       "--token-file token.txt"))
    p.add_argument("--host", default="127.0.0.1", help=_("address to listen on (default 127.0.0.1)"))
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=_("port (default %(port)s; 0: any free one, said in the line serve prints once listening)",
                          port=DEFAULT_PORT))
    p.add_argument("--public", action="store_true",
                   help=_("allow an address other than loopback; a login token is then needed before any session"))
    p.add_argument("--public-url", metavar="URL",
                   help=_("the address browsers use, when it differs from http://HOST:PORT (a proxy; needed with "
                          "0.0.0.0)"))
    p.add_argument("--max-sessions", type=int, metavar="N",
                   help=_("consoles open at once, at most (default [serve] max_sessions, else %(n)s)",
                          n=DEFAULT_MAX_SESSIONS))
    p.add_argument("--token-file", metavar="FILE",
                   help=_("with --public: the login token is this file's first line (default: a random one, printed "
                          "at start)"))
    p.add_argument("--inbox", action="store_true",
                   help=_("each browser session also takes files from the inbox (default: %(command)s does; the page "
                          "shows the store)", command="`watch`"))
    p.set_defaults(handler=cmd_serve)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def console_command(ctx, inbox: bool) -> str:
    """The shell command textual-serve runs per session (it runs it through a shell: quoted, and
    ``exec``'d, so the console is serve's own child and no shell outlives it).
    No ``--db`` here: a session's command line is readable by every local user (``ps``). ``--lang``
    is serve's own language, however it was chosen (``--lang``, ``[console] language``, the
    environment), so every session speaks it."""
    argv = [sys.executable, "-m", "console.cli", "--home", str(ctx.home.root), "--lang", i18n.language()]
    argv += ["console"] + ([] if inbox else ["--no-inbox"])
    return "exec " + shlex.join(argv)


def max_sessions(args, ctx) -> int:
    """``--max-sessions``, else ``[serve] max_sessions`` in config.toml, else the default."""
    if args.max_sessions is not None:
        value, where = args.max_sessions, "--max-sessions"
    else:
        table = read_toml(ctx.home.config).get("serve", {})
        if not isinstance(table, dict):
            raise CommandError.told(_("%(config)s: 'serve' must be a table ([serve])"), config=ctx.home.config)
        unknown = sorted(set(table) - set(SERVE_KEYS))
        if unknown:
            raise CommandError.told(_("%(config)s [serve]: unknown setting %(key)s (known: max_sessions)"),
                                    config=ctx.home.config, key=repr(unknown[0]))
        value, where = table.get("max_sessions", DEFAULT_MAX_SESSIONS), f"{ctx.home.config} [serve] max_sessions"
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SESSIONS_LIMIT:
        raise CommandError.told(_("%(setting)s must be a whole number from 1 to %(limit)s, not %(value)s"),
                                setting=where, value=repr(value), ours={"limit": MAX_SESSIONS_LIMIT})
    return value


def login_token(args) -> tuple[str, bool]:
    """The login token for ``--public`` and whether it was made here (then it is printed once)."""
    if args.token_file is None:
        return secrets.token_urlsafe(24), True
    try:
        with open(args.token_file, encoding="utf-8") as fh:
            token = fh.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError.told(_("--token-file %(path)s: cannot read: %(reason)s"), path=args.token_file,
                                reason=getattr(exc, "strerror", None) or exc.__class__.__name__) from None
    if len(token) < MIN_TOKEN or any(c.isspace() or ord(c) < 32 for c in token):
        raise CommandError.told(_("--token-file %(path)s: its first line must be the token, at least %(n)s "
                                  "characters with no spaces"), path=args.token_file, ours={"n": MIN_TOKEN})
    return token, False


def bind(host: str, port: int):
    """The listening socket, bound here so that the port served (any free one, for 0) is known before the
    guard is built: it answers only requests for that address."""
    import socket

    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise CommandError.told(_("cannot listen on %(address)s: %(reason)s"), address=f"{host}:{port}",
                                reason=exc.strerror or exc) from None
    return sock


def cmd_serve(args, ctx) -> int:
    if not 0 <= args.port <= 65535:
        raise CommandError.told(_("--port %(port)s is not a port (1 to 65535, or 0 for any free one)"),
                                ours={"port": args.port})
    if not is_loopback(args.host) and not args.public:
        raise CommandError.told(_("--host %(host)s is not a loopback address; serving the console there needs "
                                  "--public (and a login), or use an SSH tunnel to 127.0.0.1 (docs/serve-security.md)"),
                                host=args.host)
    if args.host in ("0.0.0.0", "::", "") and not args.public_url:
        raise CommandError.told(_("--host %(host)s listens on every address: say with --public-url which one "
                                  "browsers use (only requests for it are answered)"), host=args.host or "(empty)")
    if args.public_url is not None:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(args.public_url)
            parts.port
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.username \
                or parts.query:
            raise CommandError.told(_("--public-url must be an http:// or https:// address such as %(example)s, "
                                      "not %(url)s"), url=repr(args.public_url),
                                    ours={"example": "https://ussd.example.org"})
    if args.token_file is not None and not args.public:
        raise CommandError.told(_("--token-file is for --public (the loopback console has no login)"))
    sessions = max_sessions(args, ctx)
    token, made = login_token(args) if args.public else (None, False)
    ctx.home.ensure()
    ctx.receiver  # opened here: a store that cannot be opened is one line, not a broken page per session
    ctx.close()
    from console.web.sessions import SERVE_PID

    if ctx.db:
        os.environ["USSD_CONSOLE_DB"] = ctx.db  # textual-serve gives each session this environment
    os.environ[SERVE_PID] = str(os.getpid())  # a session whose serve is gone quits (console.web.sessions)
    from console.web.guard import GuardedServer

    sock = bind(args.host, args.port)
    port = sock.getsockname()[1]  # the one bound: --port 0 asks for any free one
    if not is_loopback(args.host):
        print(f"ussd-console: WARNING: serving the console on {args.host}:{port} to the network: anyone "
              "with the login token can read the ledger and act as the console", file=sys.stderr)
    server = GuardedServer(console_command(ctx, args.inbox), host=args.host, port=port, title="USSD console",
                           public_url=args.public_url, max_sessions=sessions, token=token,
                           templates_path=TEMPLATES, sock=sock)
    if made:
        print(f"ussd-console: login token (give it at {server.public_url}/login): {token}", file=sys.stderr)
    sys.stderr.flush()
    server.serve()
    return 0
