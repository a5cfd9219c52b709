"""Eviction of old frame ids: ``evict`` now, and ``evictions``, the log of every run."""

from __future__ import annotations

from rich.text import Text

from console.render import make_console, print_json, table
from core.i18n import N_, _, ngettext, number
from core.store.records import Eviction

from .audit import print_retention_fault
from .common import add_paging, minute, retention_length, with_examples


def register(sub, common) -> None:
    p = sub.add_parser("evictions", parents=[common], help=_("the eviction log"),
                       **with_examples("ussd-console evictions", "ussd-console evictions --limit 10 --json"))
    add_paging(p, offset=False)
    p.set_defaults(handler=cmd_evictions)

    p = sub.add_parser("evict", parents=[common],
                       help=_("forget frame ids older than the retention now (cases stay; logged)"),
                       **with_examples("ussd-console evict", "ussd-console retention show"))
    p.set_defaults(handler=cmd_evict, writes=True)


def _removed_range(e: Eviction) -> Text:
    """When the removed frame ids were first seen: oldest over newest (once if the same minute)."""
    if not e.removed:
        return Text("-")
    oldest, newest = minute(e.oldest), minute(e.newest)
    return Text(oldest if oldest == newest else f"{oldest}\n{newest}")  # a line break, not text to escape


def _eviction_rows(rows):
    return [(minute(e.ran_at), Text(retention_length(e.retention_seconds)), minute(e.cutoff), Text(number(e.removed)),
             _removed_range(e), e.started_by) for e in rows]


# Frame ids first seen before the cutoff were removed; --json has every time to the second.
EVICTION_COLUMNS = [N_("ran at"), N_("policy"), N_("cutoff"), N_("removed"), N_("first seen of those removed"),
                    N_("started by")]


def cmd_evictions(args, ctx) -> int:
    rows = ctx.receiver.evictions(limit=args.limit)
    if ctx.json:
        for row in rows:
            print_json(row.to_dict())
        return 0
    columns = [_(c) for c in EVICTION_COLUMNS]
    make_console().print(table(_("Eviction log"), columns, _eviction_rows(rows), codes=columns,
                               drop=(columns[1],)))  # the policy: the cutoff says it, ran at less the policy
    return 0


def cmd_evict(args, ctx) -> int:
    removed = ctx.receiver.evict(started_by="cli")
    policy = ctx.receiver.retention()
    if ctx.json:
        print_json({"removed": removed, "retention_seconds": policy["retention_seconds"],
                    "retention_fault": policy["fault"]})
    else:
        make_console().print(Text(ngettext(
            "forgot %(n)s frame id first seen more than %(length)s ago; the cases stay",
            "forgot %(n)s frame ids first seen more than %(length)s ago; the cases stay", removed,
            n=number(removed), length=retention_length(policy["retention_seconds"]))))
        print_retention_fault(policy)
    return 0
