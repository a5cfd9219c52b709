"""The report's tables as data tables, one per breakdown, for ``report --format csv|xlsx``: the
figures of ``Figures`` (the same model the HTML and the PDF show) in columns a spreadsheet or an
HXL reader takes in, with plain numbers and ISO dates rather than the page's words.

Pure: column names here are the ones ``core.rules.hxl`` gives hashtags to, so ``--hxl`` tags
every column. The health section is left out: it is the home's state now, not a table of the
period, and ``status --json`` carries it.
"""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from .model import Count, Figures


class DataTable(NamedTuple):
    name: str  # the CSV's file stem and the sheet's name
    header: list[str]
    rows: list[list]


def iso(ts: float | None) -> str:
    """A time as the exports write it: ISO 8601 in local time with its offset."""
    if ts is None:
        return ""
    return dt.datetime.fromtimestamp(float(ts)).astimezone().isoformat(timespec="seconds")


def _counts(rows: list[Count]) -> list[list]:
    return [[c.key, c.cases, c.people] for c in rows]


def _summary(f: Figures) -> DataTable:
    oldest = None if f.oldest_waiting is None else round(f.oldest_waiting / 3600, 2)
    return DataTable("summary", ["since", "until", "made_at", "site", "cases", "people", "sites",
                                 "oldest_waiting_hours", "checkpoint"],
                     [[iso(f.since), iso(f.until), iso(f.made_at), f.site or "", f.cases, f.people,
                       f.sites_total, oldest, f.checkpoint]])


def _sites(f: Figures) -> DataTable:
    """Each site of the report by name; the report's last row (the sites past the first ones,
    together) has no site name and says so in ``note``."""
    rows = [[c.key, c.cases, c.people, "" if c.key else c.label] for c in f.by_site]
    return DataTable("sites", ["site", "cases", "people", "note"], rows)


def _arrivals(f: Figures) -> DataTable:
    return DataTable("arrivals", ["start", "end", "cases"],
                     [[iso(t), iso(t + f.bucket_seconds), n] for t, n in f.arrivals])


def _ranking(f: Figures) -> DataTable:
    header = ["rank", "frame_id", "site", "need", "need_name", "headcount", "pri", "status", "disputed",
              "first_seen"]
    return DataTable("ranking", header, [[r["rank"], r["frame_id"], r["site"], r["need"], r["need_name"],
                                          r["people"], r["pri"], r["status"], r["disputed"],
                                          iso(r["first_seen"])] for r in f.ranking])


def _conflicts(f: Figures) -> list[DataTable]:
    c = f.conflicts
    return [
        DataTable("conflicts", ["status", "count"],
                  [["opened", c["opened"]], ["resolved", c["resolved"]], ["still_open", c["still_open"]]]),
        DataTable("conflicts_resolved", ["conflict_id", "frame_id", "reason", "decision", "resolved_at",
                                         "resolved_by"],
                  [[r["id"], r["frame_id"], r["reason"], r["decision"], iso(r["resolved_at"]), r["resolved_by"]]
                   for r in c["resolved_rows"]]),
        DataTable("conflicts_resolved_by", ["resolved_by", "count"],
                  [[who, n] for who, n in sorted(c["resolved_by"].items(), key=lambda x: (-x[1], x[0]))]),
    ]


def data_tables(f: Figures) -> list[DataTable]:
    """Every table of the report, in the page's order after the summary."""
    return [
        _summary(f),
        DataTable("needs", ["need", "need_name", "cases", "people"],
                  [[c.key, c.label, c.cases, c.people] for c in f.by_need]),
        _sites(f),
        DataTable("status", ["status", "cases", "people"], _counts(f.by_status)),
        DataTable("waiting", ["waited", "cases", "people"], [[c.label, c.cases, c.people] for c in f.waiting]),
        _arrivals(f),
        _ranking(f),
        *_conflicts(f),
        DataTable("rejects_by_reason", ["reason", "reason_name", "count"],
                  [[c.key, c.label, c.cases] for c in f.rejects_by_reason]),
        DataTable("rejects_by_path", ["path", "count"], [[c.key, c.cases] for c in f.rejects_by_path]),
    ]


TABLE_NAMES = ("summary", "needs", "sites", "status", "waiting", "arrivals", "ranking", "conflicts",
               "conflicts_resolved", "conflicts_resolved_by", "rejects_by_reason", "rejects_by_path")
