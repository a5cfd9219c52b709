"""``quarantine``: the conflicts waiting for an operator (and, with --all, the resolved ones)."""

from __future__ import annotations

from rich.text import Text

from console.render import make_console, print_json, safe, table
from core.i18n import _
from core.rules.explain import reason_words
from core.rules.words import resolution_words
from core.store.records import Conflict

from .common import add_paging, with_examples


def register(sub, common) -> None:
    p = sub.add_parser("quarantine", parents=[common], help=_("conflicts waiting for an operator"),
                       **with_examples("ussd-console quarantine", "ussd-console quarantine --all --limit 100",
                                       'ussd-console resolve 12 --keep-first --operator alice --reason "site confirmed"'))
    p.add_argument("--all", action="store_true", help=_("resolved ones too"))
    add_paging(p, offset=False)
    p.set_defaults(handler=cmd_quarantine)


def cmd_quarantine(args, ctx) -> int:
    rows = ctx.receiver.quarantine(status=None if args.all else "open", limit=args.limit)
    if ctx.json:
        for row in rows:
            print_json(row.to_dict())
        return 0
    id_, frame_id, versions, seen, status = _("id"), _("frame_id"), _("ledger now / new version"), _("seen"), _("status")
    columns = [id_, frame_id, versions, _("what differs"), seen]
    if args.all:
        columns.append(status)
    make_console().print(table(
        _("Quarantine") if args.all else _("Quarantine (open)"), columns,
        [(q.id, q.frame_id, _versions(q), reason_words(q.reason), q.seen_count,
          *((resolution_words(q.status, short=True),) if args.all else ())) for q in rows],
        codes=(id_, frame_id, versions, seen, status), drop=(seen,),
    ))
    if rows and not args.all:
        make_console().print(Text(_("resolve with: %(command)s (or %(flag)s)",
                                    command="ussd-console resolve ID --keep-first --operator NAME --reason TEXT",
                                    flag="--accept-correction")))
    return 0


def _versions(q: Conflict) -> Text:
    """The newcomer under what the ledger holds for the case now: the version a decision keeps or
    replaces, which an accepted correction may have changed since the conflict's recorded first."""
    ledger, first, new = _("ledger:"), _("first:"), _("new:")
    width = max(map(len, (ledger, first, new))) + 1  # the versions line up under each other, in any language
    label, text = (ledger, q.ledger_text) if q.ledger_text is not None else (first, q.first_text)
    return safe(label.ljust(width) + text) + Text("\n") + safe(new.ljust(width) + q.frame_text)
