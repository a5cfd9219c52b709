"""HXL hashtags (the Humanitarian Exchange Language, hxlstandard.org) for the export columns:
the row under the header that HDX and the cluster tools read, so no office re-labels columns.

Pure data. Hashtags are the HXL dictionary's core ones (``#meta``, ``#loc``, ``#sector``,
``#affected``, ``#severity``, ``#status``, ``#date``, ``#indicator``, ``#description``);
attributes say which of a kind a column is (``+id``, ``+code``, ``+name``, ``+reported`` ...). A
column not listed is ``#meta`` with its own name as the attribute, so every column is tagged and
a reader keeps it.
"""

from __future__ import annotations

import re

HASHTAGS: dict[str, str] = {
    "frame_id": "#meta+id",
    "rank": "#meta+rank",
    "site": "#loc+name",
    "need": "#sector+code",
    "need_name": "#sector+name",
    "headcount": "#affected+ind",
    "pri": "#severity+num+priority",
    "status": "#status",
    "disputed": "#status+disputed",
    "version": "#meta+version",
    "first_seen": "#date+reported",
    "updated_at": "#date+updated",
    "last_seen": "#date+seen+last",
    "resolved_at": "#date+resolved",
    "resolved_by": "#meta+resolved_by",
    "claimed_at": "#date+claimed",
    "finished_at": "#date+finished",
    "when": "#date+reported",
    "at": "#date+signed",
    "path": "#meta+path",
    "frame": "#meta+frame",
    "reason": "#meta+reason",
    # The situation report's tables (``report --format csv|xlsx --hxl``): counts of cases (and of
    # conflicts, rejects) as HXL Proxy's own count column, people as people affected, a bucket or
    # period by its start and end, other numbers as numeric indicators.
    "cases": "#meta+count",
    "count": "#meta+count",
    "people": "#affected+ind",
    "since": "#date+start",
    "until": "#date+end",
    "start": "#date+start",
    "end": "#date+end",
    "made_at": "#date+reported",
    "sites": "#indicator+num+sites",
    "oldest_waiting_hours": "#indicator+num+waited+hours",
    "waited": "#meta+waited",
    "checkpoint": "#meta+checkpoint",
    "note": "#description",
    "conflict_id": "#meta+conflict",
    "decision": "#status+decision",
    "reason_name": "#meta+reason+name",
}

_ATTRIBUTE = re.compile(r"[^a-z0-9_]")


def hashtag(column: str) -> str:
    """The column's HXL hashtag with attributes."""
    found = HASHTAGS.get(column)
    if found:
        return found
    attribute = _ATTRIBUTE.sub("_", column.lower()).strip("_") or "column"
    return f"#meta+{attribute if attribute[0].isalpha() else 'c' + attribute}"


def hashtag_row(header: list[str]) -> list[str]:
    return [hashtag(c) for c in header]
