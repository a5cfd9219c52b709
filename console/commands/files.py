"""``ussd-console files``: every inbox file with its state, so a rejected file is never only a log line."""

from __future__ import annotations

from console.render import make_console, print_json, table, when
from core.i18n import _
from core.inbox import SHOWN_STATES, inbox_files

from .common import add_paging, with_examples


def register(sub, common) -> None:
    p = sub.add_parser("files", parents=[common],
                       help=_("inbox files: state, arrival path, frames, reason (rejected files included)"),
                       **with_examples("ussd-console files", "ussd-console files --state rejected",
                                       "ussd-console files --json --limit 1000"))
    p.add_argument("--state", choices=sorted(SHOWN_STATES.values()), help="only files in this state")
    add_paging(p, limit=200)
    p.set_defaults(handler=cmd_files)


def cmd_files(args, ctx) -> int:
    rows = inbox_files(ctx.receiver, state=args.state, limit=args.limit, offset=args.offset)
    if ctx.json:
        for row in rows:
            print_json(row.to_dict())
        return 0
    title = f"Inbox files{' (' + args.state + ')' if args.state else ''}: {len(rows)} shown, newest first"
    make_console().print(table(title, ["file", "state", "path", "frames", "lines", "reason", "kept as", "claimed"], [
        (r.name, r.state, r.path, r.frames, r.lines, r.reason or "-", r.archived_as or "-",
         when(r.claimed_at)) for r in rows
    ], codes=("state", "path", "frames", "lines"), drop=("claimed", "lines")))
    return 0
