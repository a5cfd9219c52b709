"""``ussd-console serve``: the operator console in a browser, through ``textual-serve``.

Each browser session runs its own ``ussd-console console`` process behind a
web socket. The server listens on the loopback address unless ``--public``
says otherwise, since the page has no login of its own: reach it through an
SSH tunnel instead (docs/admin.md). The page is ``console/web/app_index.html``:
textual-serve's own, with its web-font link replaced by the font files
textual-serve ships, so it fetches nothing from outside the machine.
"""

from __future__ import annotations

import ipaddress
import shlex
import sys
from pathlib import Path

from console.errors import CommandError

TEMPLATES = Path(__file__).resolve().parent.parent / "web"
DEFAULT_PORT = 8566


def register(sub, common) -> None:
    p = sub.add_parser("serve", parents=[common],
                       help=f"the console in a browser at http://127.0.0.1:{DEFAULT_PORT} (no login: use an SSH tunnel)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument("--public", action="store_true",
                   help="allow an address other than loopback: anyone who reaches it can use the console")
    p.add_argument("--public-url", metavar="URL",
                   help="the address browsers use, when it differs from http://HOST:PORT (a proxy, 0.0.0.0)")
    p.add_argument("--inbox", action="store_true",
                   help="each browser session also takes files from the inbox (default: `watch` does; the page shows the store)")
    p.set_defaults(handler=cmd_serve)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def console_command(ctx, inbox: bool) -> str:
    """The shell command textual-serve runs per session (it runs it through a shell: quoted)."""
    argv = [sys.executable, "-m", "console.cli", "--home", str(ctx.home.root)]
    if ctx.db:
        argv += ["--db", ctx.db]
    argv += ["console"] + ([] if inbox else ["--no-inbox"])
    return shlex.join(argv)


def cmd_serve(args, ctx) -> int:
    if not 1 <= args.port <= 65535:
        raise CommandError(f"--port {args.port} is not a port (1 to 65535)")
    if not is_loopback(args.host) and not args.public:
        raise CommandError(f"--host {args.host} is not a loopback address; the page has no login, so serving it "
                           "there needs --public (or use an SSH tunnel to 127.0.0.1, see docs/admin.md)")
    ctx.home.ensure()
    _ = ctx.receiver  # a store that cannot be opened is one line here, not a broken page per session
    ctx.close()
    from textual_serve.server import Server

    if not is_loopback(args.host):
        print(f"ussd-console: WARNING: serving the console on {args.host}:{args.port} with NO LOGIN: anyone who "
              "can reach this address can read the ledger and act as the console", file=sys.stderr)
    server = Server(console_command(ctx, args.inbox), host=args.host, port=args.port, title="USSD console",
                    public_url=args.public_url, templates_path=TEMPLATES)
    server.serve()
    return 0
