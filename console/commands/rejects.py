"""``rejects``: the lines that were not valid frames, with what was wrong in words."""

from __future__ import annotations

import os

from rich.text import Text

from console.render import make_console, print_json, safe, table, when
from core.i18n import _
from core.rules.explain import explain_reject
from core.store.records import Reject

from .common import add_paging, with_examples


def register(sub, common) -> None:
    p = sub.add_parser("rejects", parents=[common],
                       help=_("lines that were not valid frames, newest first, with what was wrong"),
                       **with_examples("ussd-console rejects", "ussd-console rejects --limit 200",
                                       "ussd-console rejects --json > rejects.jsonl"))
    add_paging(p, offset=False)
    p.set_defaults(handler=cmd_rejects)


def cmd_rejects(args, ctx) -> int:
    rows = ctx.receiver.rejects(limit=args.limit)
    if ctx.json:
        for row in rows:
            print_json(row.to_dict())
        return 0
    where, frame_id, line = _("file:line, when"), _("frame_id"), _("the line, and what was wrong")
    make_console().print(table(
        _("Rejects (newest first)"), [where, frame_id, line],
        [(reject_where(x) + Text("\n" + when(x.ts), style="dim"), x.frame_id,
          safe(x.frame_text, 200) + Text("\n") + Text(explain_reject(x.frame_id, x.frame_text, x.reason),
                                                       style="bold"))
         for x in rows],
        codes=(where, frame_id),
    ))
    return 0


def reject_where(x: Reject) -> Text:
    name = os.path.basename(x.file or "")
    if not name:
        return safe(f"({x.source})")
    return safe(name, 60) + Text(f":{x.line}" if x.line is not None else "")
