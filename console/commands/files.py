"""``ussd-console files``: every inbox file with its state, so a rejected file is never only a log line."""

from __future__ import annotations

from console.render import make_console, print_json, table, when
from core.i18n import _, ngettext, number
from core.inbox import SHOWN_STATES, inbox_files

from .common import add_paging, with_examples


def register(sub, common) -> None:
    p = sub.add_parser("files", parents=[common],
                       help=_("inbox files: state, arrival path, frames, reason (rejected files included)"),
                       **with_examples("ussd-console files", "ussd-console files --state rejected",
                                       "ussd-console files --json --limit 1000"))
    p.add_argument("--state", choices=sorted(SHOWN_STATES.values()), help=_("only files in this state"))
    add_paging(p, limit=200)
    p.set_defaults(handler=cmd_files)


def cmd_files(args, ctx) -> int:
    rows = inbox_files(ctx.receiver, state=args.state, limit=args.limit, offset=args.offset)
    if ctx.json:
        for row in rows:
            print_json(row.to_dict())
        return 0
    n = len(rows)
    title = (ngettext("Inbox files (%(state)s): %(n)s shown, newest first",
                      "Inbox files (%(state)s): %(n)s shown, newest first", n, state=args.state, n=number(n))
             if args.state else ngettext("Inbox files: %(n)s shown, newest first",
                                         "Inbox files: %(n)s shown, newest first", n, n=number(n)))
    state, path, frames, lines, claimed = _("state"), _("path"), _("frames"), _("lines"), _("claimed")
    make_console().print(table(title, [_("file"), state, path, frames, lines, _("reason"), _("kept as"), claimed], [
        (r.name, r.state, r.path, r.frames, r.lines, r.reason or "-", r.archived_as or "-",
         when(r.claimed_at)) for r in rows
    ], codes=(state, path, frames, lines), drop=(claimed, lines)))
    return 0
