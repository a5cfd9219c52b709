"""The report's sections as titled tables of plain strings: the one reading of ``Figures`` that
the HTML and the PDF both lay out, so their numbers are the same numbers."""

from __future__ import annotations

import time
from typing import NamedTuple

from core.i18n import _, number

from . import labels
from .figures import SITES_SHOWN
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
        return _("%(n)s min", n=number(int(seconds // 60)))
    if seconds < 2 * 86400:
        return _("%(n)s h", n=number(round(seconds / 3600, 1)))
    return _("%(n)s days", n=number(round(seconds / 86400, 1)))


def n(value: int) -> str:
    return number(value)


def title_lines(f: Figures) -> list[str]:
    where = _("site %(site)s", site=f.site) if f.site else _("every site")
    return [_("Home %(home)s", home=f.home),
            _("Period %(since)s to %(until)s (%(where)s)", since=stamp(f.since), until=stamp(f.until), where=where),
            _("Made %(when)s", when=stamp(f.made_at))]


def headline(f: Figures) -> list[tuple[str, str]]:
    by = {c.key: c.cases for c in f.by_status}
    return [(_("new cases"), n(f.cases)), (_("people"), n(f.people)), (_("still open"), n(by.get("open", 0))),
            (_("dispatched"), n(by.get("dispatched", 0))), (_("served"), n(by.get("served", 0))),
            (_("conflicts open"), n(f.conflicts["still_open"]))]


def tables(f: Figures) -> list[Table]:
    busy = [(t, c) for t, c in f.arrivals if c]
    daily = f.bucket_seconds >= 86400
    unit = _("day") if daily else _("hour")
    c = f.conflicts
    h = f.health
    out = [
        Table(_("Arrivals per day") if daily else _("Arrivals per hour"), [unit, _("new cases")],
              [[stamp(t), n(k)] for t, k in busy], "arrivals",
              (_("%(n)s other days of the period had none.", n=n(len(f.arrivals) - len(busy))) if daily else
               _("%(n)s other hours of the period had none.", n=n(len(f.arrivals) - len(busy)))) if busy
              else _("No arrivals.")),
        Table(_("People by need"), [_("need"), _("code"), _("cases"), _("people")],
              [[labels.need(x.key, x.label), x.key, n(x.cases), n(x.people)] for x in f.by_need], "people_by_need"),
        Table(_("Cases by status now"), [_("status"), _("cases"), _("people")],
              [[labels.status(x.key), n(x.cases), n(x.people)] for x in f.by_status], "cases_by_status"),
        Table(_("By site"), [_("site"), _("cases"), _("people")],
              [[labels.site(x, f, SITES_SHOWN), n(x.cases), n(x.people)] for x in f.by_site],
              note=_("%(n)s sites in all.", n=n(f.sites_total))),
        Table(_("Waiting (open and dispatched cases of the period)"), [_("waited"), _("cases"), _("people")],
              [[labels.waited(x), n(x.cases), n(x.people)] for x in f.waiting],
              note=_("The longest has waited %(span)s.", span=span(f.oldest_waiting))),
        Table(_("Top of the dispatch ranking now"),
              [_("rank"), _("frame"), _("site"), _("need"), _("people"), _("pri"), _("status")],
              [[str(r["rank"]), r["frame_id"], r["site"], labels.need(r["need"], r["need_name"]), n(r["people"]),
                str(r["pri"]), labels.status(r["status"]) + (_(" (disputed)") if r["disputed"] else "")]
               for r in f.ranking]),
        Table(_("Conflicts"), [_("opened in the period"), _("resolved in the period"), _("still open")],
              [[n(c["opened"]), n(c["resolved"]), n(c["still_open"])]]),
        Table(_("Conflicts resolved, by whom (signed in the audit log)"), [_("operator"), _("resolved")],
              [[who, n(k)] for who, k in sorted(c["resolved_by"].items())]),
        Table(_("Latest resolved"), [_("conflict"), _("frame"), _("decision"), _("by"), _("when")],
              [[str(r["id"]), r["frame_id"], r["decision"], r["resolved_by"], stamp(r["resolved_at"])]
               for r in c["resolved_rows"]]),
        Table(_("Rejects by reason"), [_("reason"), _("frames")],
              [[labels.reason(x.key), n(x.cases)] for x in f.rejects_by_reason]),
        Table(_("Rejects by arrival path or gateway"), [_("path"), _("frames")],
              [[x.label, n(x.cases)] for x in f.rejects_by_path]),
        Table(_("Health now"), [_("what"), _("state")], [
            [_("receiver"), _("running") if h.get("receiver_running") else _("not running")],
            [_("observer / sweep"), f"{labels.part(h.get('observer', '-'))} / {labels.part(h.get('sweep', '-'))}"],
            [_("last frame"), stamp(h.get("last_frame_at"))],
            [_("inbox files waiting"), n(h.get("files_waiting", 0))],
            [_("alerts pending"), n(h.get("alerts_pending", 0))],
            [_("faults"), "; ".join(h.get("faults", [])) or _("none")],
            [_("backups"), h.get("backup", "-")],
        ]),
        Table(_("Gateways"), [_("gateway"), _("kind"), _("posts accepted"), _("refused"), _("last post")],
              [[name, g["kind"] + (_(" (retired)") if g["retired"] else ""), n(g["accepted"]), n(g["refused"]),
                stamp(g["last_post"])] for name, g in sorted(h.get("gateways", {}).items())]),
    ]
    return out
