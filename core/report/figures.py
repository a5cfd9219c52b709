"""The report's figures for a period, from the store: a few grouped scans of the ledger, never a
row per case in Python, so a 1,000,000-frame store is reported in seconds.

The period's cases are those first seen in ``[since, until)`` (as ``cases --since --until``);
their status is the one they have now. Conflicts, rejects and health are the whole home's.
"""

from __future__ import annotations

import time

from peewee import SQL, Case as When, PostgresqlDatabase, fn

from core.i18n import N_
from core.rules.cells import mask_phones
from core.rules.frame import NEED_NAMES
from core.rules.lifecycle import RANKED, STATUSES
from core.rules.reasons import in_english

from .model import Count, Figures
from .period import Period

SITES_SHOWN = 15
RANKING_SHOWN = 10
RESOLVED_SHOWN = 20
# English, as --json and the exports write them; the pages show them translated (core.report.labels).
WAIT_BUCKETS = ((3600, N_("under 1 hour")), (6 * 3600, N_("1-6 hours")), (86400, N_("6-24 hours")),
                (3 * 86400, N_("1-3 days")), (None, N_("over 3 days")))


def _text(value) -> str:
    """Outside text as the report shows it: phone-like runs masked (escaping is the renderer's)."""
    return mask_phones("" if value is None else str(value))


def _cases_in(receiver, period: Period, *fields):
    C = receiver.m.Case
    q = C.select(*fields).where(C.first_seen >= period.since, C.first_seen < period.until)
    return q.where(C.site == period.site) if period.site else q


def _wait_bucket(at: float):
    """Which of ``WAIT_BUCKETS`` a case first seen at ``first_seen`` is in at ``at``, in SQL."""
    waited = SQL(f"({float(at)!r} - first_seen)")
    whens = [(waited < limit, i) for i, (limit, _) in enumerate(WAIT_BUCKETS) if limit is not None]
    return When(None, whens, len(WAIT_BUCKETS) - 1)


def _breakdowns(receiver, period: Period, at: float):
    """One scan of the period's cases: cases and people per (need, site, status), and the open and
    dispatched ones by how long they have waited at ``at`` (with the longest wait)."""
    C = receiver.m.Case
    bucket = _wait_bucket(at)
    rows = (_cases_in(receiver, period, C.need, C.site, C.status, bucket.alias("wait"), fn.COUNT(C.id),
                      fn.SUM(C.headcount), fn.MIN(C.first_seen))
            .group_by(C.need, C.site, C.status, SQL("wait")).tuples())
    needs: dict[str, list[int]] = {}
    sites: dict[str, list[int]] = {}
    statuses: dict[str, list[int]] = {s: [0, 0] for s in STATUSES}
    waits: dict[int, list[int]] = {i: [0, 0] for i in range(len(WAIT_BUCKETS))}
    firsts = []
    for need, site, status, wait, n, people, first in rows:
        tables = [(needs, need), (sites, site), (statuses, status)]
        if status in RANKED:
            tables.append((waits, int(wait)))
            firsts.append(first)
        for table, key in tables:
            cell = table.setdefault(key, [0, 0])
            cell[0] += int(n)
            cell[1] += int(people or 0)
    waiting = [Count(str(i), label, *waits[i]) for i, (_, label) in enumerate(WAIT_BUCKETS)]
    oldest = max(0.0, at - min(firsts)) if firsts else None
    return needs, sites, statuses, waiting, oldest


def _arrivals(receiver, period: Period, bucket: int) -> list[tuple[float, int]]:
    C = receiver.m.Case
    start = int(period.since // bucket)
    key = SQL(f"CAST(FLOOR(first_seen / {bucket}) AS INTEGER)") if _is_pg(receiver) \
        else SQL(f"CAST(first_seen / {bucket} AS INTEGER)")
    counts = dict(_cases_in(receiver, period, key, fn.COUNT(C.id)).group_by(key).tuples())
    end = int((period.until - 1e-6) // bucket)
    return [(float(b * bucket), int(counts.get(b, 0))) for b in range(start, end + 1)]


def _is_pg(receiver) -> bool:
    return isinstance(receiver.db, PostgresqlDatabase)


def _ranking(receiver, period: Period) -> list[dict]:
    rows = receiver.ranking(limit=RANKING_SHOWN if not period.site else 1000)
    if period.site:
        rows = [r for r in rows if r.site == period.site][:RANKING_SHOWN]
    return [{"rank": r.rank, "frame_id": _text(r.frame_id), "site": _text(r.site), "need": r.need,
             "need_name": NEED_NAMES.get(r.need, ""), "people": r.headcount, "pri": r.pri,
             "status": r.status, "disputed": bool(r.disputed), "first_seen": r.first_seen}
            for r in rows]


def _conflicts(receiver, period: Period) -> dict:
    Q = receiver.m.Quarantine
    opened = Q.select().where(Q.first_seen >= period.since, Q.first_seen < period.until).count()
    resolved_q = Q.select(Q.id, Q.frame_id, Q.reason, Q.resolved_at, Q.resolved_by, Q.status).where(
        Q.resolved_at >= period.since, Q.resolved_at < period.until)
    resolved = resolved_q.count()
    rows = [{"id": i, "frame_id": _text(f), "reason": reason, "resolved_at": at, "resolved_by": _text(by),
             "decision": status}
            for i, f, reason, at, by, status in resolved_q.order_by(Q.resolved_at.desc()).limit(RESOLVED_SHOWN).tuples()]
    by_whom: dict[str, int] = {}
    for by, n in (Q.select(Q.resolved_by, fn.COUNT(Q.id)).where(Q.resolved_at >= period.since,
                                                               Q.resolved_at < period.until)
                  .group_by(Q.resolved_by).tuples()):
        by_whom[_text(by)] = int(n)
    still_open = Q.select().where(Q.status == "open").count()
    return {"opened": opened, "resolved": resolved, "still_open": still_open, "resolved_by": by_whom,
            "resolved_rows": rows}


def _rejects(receiver, period: Period) -> tuple[list[Count], list[Count]]:
    R = receiver.m.Reject
    out = []
    for col in (R.reason, R.source):
        q = (R.select(col, fn.COUNT(R.id)).where(R.ts >= period.since, R.ts < period.until)
             .group_by(col).order_by(fn.COUNT(R.id).desc(), col).tuples())
        if col is R.reason:
            out.append([Count(str(k), in_english(k), int(n)) for k, n in q])
        else:
            out.append([Count(_text(k), _text(k), int(n)) for k, n in q])
    return out[0], out[1]


def checkpoint_line(receiver) -> str:
    """The line ``audit checkpoint`` prints (only when the log verifies, tables included)."""
    from core.signing import audit

    result, cp = audit.make_checkpoint(receiver)
    if cp is None:
        return f"audit log checkpoint: none, the log does not verify ({result.why})"
    return cp.line()


def _sorted(table: dict[str, list[int]], label) -> list[Count]:
    rows = [Count(_text(k), label(k), v[0], v[1]) for k, v in table.items()]
    return sorted(rows, key=lambda c: (-c.people, -c.cases, c.key))


def compute(receiver, period: Period, home: str, health: dict, now: float | None = None) -> Figures:
    """Every figure of the report for ``period`` (``health`` is gathered by the caller: it reads the
    home's files as well as the store)."""
    now = time.time() if now is None else now
    needs, sites, statuses, waiting, oldest = _breakdowns(receiver, period, min(now, period.until))
    bucket = 3600 if period.until - period.since <= 8 * 86400 else 86400
    by_site = _sorted(sites, _text)
    shown = by_site[:SITES_SHOWN]
    if len(by_site) > SITES_SHOWN:
        rest = by_site[SITES_SHOWN:]
        shown.append(Count("", f"{len(rest)} other sites", sum(c.cases for c in rest), sum(c.people for c in rest)))
    rejects_reason, rejects_path = _rejects(receiver, period)
    return Figures(
        home=home, since=period.since, until=period.until, made_at=now, site=period.site,
        cases=sum(v[0] for v in statuses.values()), people=sum(v[1] for v in statuses.values()),
        by_need=_sorted(needs, lambda k: NEED_NAMES.get(k, k)), by_site=shown, sites_total=len(sites),
        by_status=[Count(s, s, *statuses[s]) for s in STATUSES],
        waiting=waiting, oldest_waiting=oldest,
        arrivals=_arrivals(receiver, period, bucket), bucket_seconds=bucket,
        ranking=_ranking(receiver, period), conflicts=_conflicts(receiver, period),
        rejects_by_reason=rejects_reason, rejects_by_path=rejects_path,
        health=health, checkpoint=checkpoint_line(receiver),
        notes=["Cases are those first seen in the period, with the status they have now."
               + (" Conflicts, rejects and health are the whole home's." if period.site else "")],
    )
