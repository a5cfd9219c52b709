"""The report's sections as titled tables of plain strings: the one reading of ``Figures`` that
the HTML and the PDF both lay out, so their numbers are the same numbers."""

from __future__ import annotations

import time
from typing import NamedTuple

from .model import Figures


class Table(NamedTuple):
    title: str
    header: list[str]
    rows: list[list[str]]
    chart: str | None = None  # the chart (core.report.charts.CHARTS) this table gives the numbers of
    note: str = ""


def stamp(ts: float | None) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def span(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def n(value: int) -> str:
    return f"{value:,}"


def title_lines(f: Figures) -> list[str]:
    where = f"site {f.site}" if f.site else "every site"
    return [f"Home {f.home}", f"Period {stamp(f.since)} to {stamp(f.until)} ({where})",
            f"Made {stamp(f.made_at)}"]


def headline(f: Figures) -> list[tuple[str, str]]:
    by = {c.key: c.cases for c in f.by_status}
    return [("new cases", n(f.cases)), ("people", n(f.people)), ("still open", n(by.get("open", 0))),
            ("dispatched", n(by.get("dispatched", 0))), ("served", n(by.get("served", 0))),
            ("conflicts open", n(f.conflicts["still_open"]))]


def tables(f: Figures) -> list[Table]:
    busy = [(t, c) for t, c in f.arrivals if c]
    unit = "day" if f.bucket_seconds >= 86400 else "hour"
    c = f.conflicts
    h = f.health
    out = [
        Table(f"Arrivals per {unit}", [unit, "new cases"], [[stamp(t), n(k)] for t, k in busy], "arrivals",
              f"{len(f.arrivals) - len(busy)} other {unit}s of the period had none." if busy else "No arrivals."),
        Table("People by need", ["need", "code", "cases", "people"],
              [[x.label, x.key, n(x.cases), n(x.people)] for x in f.by_need], "people_by_need"),
        Table("Cases by status now", ["status", "cases", "people"],
              [[x.label, n(x.cases), n(x.people)] for x in f.by_status], "cases_by_status"),
        Table("By site", ["site", "cases", "people"], [[x.label, n(x.cases), n(x.people)] for x in f.by_site],
              note=f"{f.sites_total} sites in all."),
        Table("Waiting (open and dispatched cases of the period)", ["waited", "cases", "people"],
              [[x.label, n(x.cases), n(x.people)] for x in f.waiting],
              note=f"The longest has waited {span(f.oldest_waiting)}."),
        Table("Top of the dispatch ranking now", ["rank", "frame", "site", "need", "people", "pri", "status"],
              [[str(r["rank"]), r["frame_id"], r["site"], r["need_name"] or r["need"], n(r["people"]), str(r["pri"]),
                r["status"] + (" (disputed)" if r["disputed"] else "")] for r in f.ranking]),
        Table("Conflicts", ["opened in the period", "resolved in the period", "still open"],
              [[n(c["opened"]), n(c["resolved"]), n(c["still_open"])]]),
        Table("Conflicts resolved, by whom (signed in the audit log)", ["operator", "resolved"],
              [[who, n(k)] for who, k in sorted(c["resolved_by"].items())]),
        Table("Latest resolved", ["conflict", "frame", "decision", "by", "when"],
              [[str(r["id"]), r["frame_id"], r["decision"], r["resolved_by"], stamp(r["resolved_at"])]
               for r in c["resolved_rows"]]),
        Table("Rejects by reason", ["reason", "frames"], [[x.label, n(x.cases)] for x in f.rejects_by_reason]),
        Table("Rejects by arrival path or gateway", ["path", "frames"],
              [[x.label, n(x.cases)] for x in f.rejects_by_path]),
        Table("Health now", ["what", "state"], [
            ["receiver", "running" if h.get("receiver_running") else "not running"],
            ["observer / sweep", f"{h.get('observer', '-')} / {h.get('sweep', '-')}"],
            ["last frame", stamp(h.get("last_frame_at"))],
            ["inbox files waiting", n(h.get("files_waiting", 0))],
            ["alerts pending", n(h.get("alerts_pending", 0))],
            ["faults", "; ".join(h.get("faults", [])) or "none"],
            ["backups", h.get("backup", "-")],
        ]),
        Table("Gateways", ["gateway", "kind", "posts accepted", "refused", "last post"],
              [[name, g["kind"] + (" (retired)" if g["retired"] else ""), n(g["accepted"]), n(g["refused"]),
                stamp(g["last_post"])] for name, g in sorted(h.get("gateways", {}).items())]),
    ]
    return out
