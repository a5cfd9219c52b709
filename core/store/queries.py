"""Read queries for the command line, the console and the exports, never a write.

What a panel, an export or a command reads comes back as a named record (``records.py``); the
dicts that remain are counts keyed by what they count (per path, per outcome, per status).
"""

from __future__ import annotations

import time
from collections import Counter as Tally
from typing import Iterable

from peewee import JOIN, SQL, fn

from core.rules.frame import NEED_NAMES
from core.rules.lifecycle import OPEN, RANKED, STATUSES

from .models import RANKED_SQL
from .records import (Activity, Case, Conflict, ConflictRow, Eviction, ExportCase, HeadcountGroup, Policy,
                      PolicyChange, RankedCase, RankingRow, Reject, RejectRow, Totals, Witnesses)

# Cases per status other than open, kept in ``totals`` by the signed mark that moves
# them (so counting stays O(1) on a big store); open is all cases minus these.
STATUS_TOTAL = "status:"


class LedgerReads:
    """The reading half of ``Receiver`` (needs ``self.db`` and ``self.m``)."""

    # -- retention (R7) ----------------------------------------------------------
    def retention_seconds(self) -> int:
        return self.retention()["retention_seconds"]

    def retention(self) -> dict:
        """The policy in force, as plain data, from the ``policy`` the receiver was handed
        (``core.receiver`` hands it the signed one, ``core.signing.retention_guard``):
        the store reads policy rows but does not judge their signatures. ``fault`` says
        why a newer policy row is not applied, or is ``None``.
        """
        return self.policy(self)

    def retention_policy(self) -> Policy:
        """``retention`` as a record: what the console's Retention screen shows."""
        return Policy(**self.retention())

    def _total(self, name: str) -> int:
        """A total summed over its writers' rows (``totals.add_counts``)."""
        T = self.m.Total
        return int(T.select(fn.COALESCE(fn.SUM(T.value), 0)).where(T.name == name).scalar() or 0)

    def headcount_total(self) -> int:
        return self._total("headcount")

    def per_source(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        C = self.m.Counter
        rows = C.select(C.source, C.outcome, fn.SUM(C.count)).group_by(C.source, C.outcome).tuples()
        for source, outcome, count in rows:
            out.setdefault(source, {})[outcome] = int(count)
        return out

    def totals(self) -> Totals:
        """Header and ``status`` figures, all O(1) or indexed."""
        by_outcome: Tally = Tally()
        for counts in self.per_source().values():
            by_outcome.update(counts)
        Q = self.m.Quarantine
        policy = self.retention()
        return Totals(
            cases=self._total("cases"),
            headcount_total=self._total("headcount"),
            duplicates=by_outcome["DUPLICATE"],
            conflicts=by_outcome["CONFLICT_QUARANTINED"],
            conflicts_open=Q.select().where(Q.status == "open").count(),
            rejects=by_outcome["REJECT_BAD_FORMAT"] + by_outcome["REJECT_BAD_CRC"],
            applied=by_outcome["APPLIED"],
            frames=sum(by_outcome.values()),
            seen_frames=self._total("seen_frames"),
            retention_days=round(policy["retention_seconds"] / 86400, 3),
            retention_fault=policy["fault"],
            cases_by_status=self.cases_by_status(),
        )

    def cases_by_status(self) -> dict[str, int]:
        T = self.m.Total
        names = [STATUS_TOTAL + s for s in STATUSES if s != OPEN]
        counts = dict(T.select(T.name, fn.SUM(T.value)).where(T.name.in_(names)).group_by(T.name).tuples())
        done = {s: int(counts.get(STATUS_TOTAL + s, 0)) for s in STATUSES if s != OPEN}
        return {OPEN: self._total("cases") - sum(done.values()), **done}

    def count_ranked(self, include_done: bool = False) -> int:
        """Cases the ranking lists: open and dispatched ones, or every case with ``include_done``."""
        if include_done:
            return self._total("cases")
        by_status = self.cases_by_status()
        return sum(by_status[s] for s in RANKED)

    def open_conflict_refs(self) -> tuple[set[str], set[str]]:
        """Case keys and frame ids that open conflicts concern (for a whole export)."""
        Q = self.m.Quarantine
        keys: set[str] = set()
        ids: set[str] = set()
        for key, fid in Q.select(Q.case_key, Q.frame_id).where(Q.status == "open").tuples().iterator():
            keys.add(key)
            ids.add(fid)
        return keys, ids

    def mark_disputed(self, rows: list[dict]) -> list[dict]:
        """Set ``disputed`` on each case row: true while an open conflict concerns the case
        (same case key, so a re-ranked copy counts, or the same frame id)."""
        if not rows:
            return rows
        Q = self.m.Quarantine
        keys = list({r["case_key"] for r in rows})
        ids = list({r["frame_id"] for r in rows})
        found = list(
            Q.select(Q.case_key, Q.frame_id)
            .where((Q.status == "open") & (Q.case_key.in_(keys) | Q.frame_id.in_(ids)))
            .tuples()
        )
        hit_keys = {k for k, _ in found}
        hit_ids = {f for _, f in found}
        for r in rows:
            r["disputed"] = r["case_key"] in hit_keys or r["frame_id"] in hit_ids
        return rows

    CASE_SORTS = ("first_seen", "frame_id", "site", "need", "headcount", "pri", "updated_at")

    def _case_filter(self, query, text: str | None, since: float | None = None, until: float | None = None):
        """Cases whose site, need (code or name: "water" finds WAT) or frame id holds ``text``,
        first seen in ``[since, until)``."""
        C = self.m.Case
        if text:
            match = C.site.contains(text) | C.need.contains(text) | C.frame_id.contains(text)
            needs = [code for code, name in NEED_NAMES.items() if text.lower() in name]
            if needs:
                match = match | C.need.in_(needs)
            query = query.where(match)
        if since is not None:
            query = query.where(C.first_seen >= since)
        if until is not None:
            query = query.where(C.first_seen < until)
        return query

    def cases(self, limit: int = 100, offset: int = 0, sort: str = "first_seen",
              descending: bool = True, filter: str | None = None,
              since: float | None = None, until: float | None = None) -> list[Case]:
        """One page of the applied ledger."""
        C = self.m.Case
        if sort not in self.CASE_SORTS:
            raise ValueError(f"cannot sort cases by {sort!r}; choose one of {', '.join(self.CASE_SORTS)}")
        col = getattr(C, sort)
        order = [col.desc() if descending else col.asc(), C.id.desc() if descending else C.id.asc()]
        q = self._case_filter(C.select(), filter, since, until).order_by(*order).limit(limit).offset(offset)
        return [Case(**row) for row in self.mark_disputed(list(q.dicts()))]

    def count_cases(self, filter: str | None = None, since: float | None = None, until: float | None = None) -> int:
        if not filter and since is None and until is None:
            return self._total("cases")
        return self._case_filter(self.m.Case.select(), filter, since, until).count()

    def case_history(self, case_id: int) -> list[dict]:
        H = self.m.CaseHistory
        return list(H.select().where(H.case == case_id).order_by(H.id).dicts())

    def _ranking_query(self, fields, include_done: bool):
        C = self.m.Case
        q = C.select(*fields)
        if not include_done:
            q = q.where(SQL(RANKED_SQL))
        return q.order_by(C.pri.desc(), C.headcount.desc(), C.first_seen.asc(), C.id.asc())

    def ranking(self, limit: int = 100, offset: int = 0, include_done: bool = False) -> list[RankedCase]:
        """The dispatch order (pri desc, headcount desc, first seen) of open and dispatched
        cases, or of every case with ``include_done``; each row says its status and whether
        it is disputed."""
        C = self.m.Case
        fields = (C.id, C.case_key, C.frame_id, C.site, C.need, C.headcount, C.pri, C.first_seen, C.status)
        rows = self.mark_disputed(list(self._ranking_query(fields, include_done).limit(limit).offset(offset).dicts()))
        for row in rows:
            del row["case_key"]
        return [RankedCase(**row, rank=i) for i, row in enumerate(rows, start=offset + 1)]

    def headcount_by(self, field: str, limit: int = 20, include_done: bool = True) -> list[HeadcountGroup]:
        """Headcount per need or per site, largest first; of the ranked cases only without ``include_done``."""
        C = self.m.Case
        if field not in ("need", "site"):
            raise ValueError("headcount_by takes 'need' or 'site'")
        col = getattr(C, field)
        total = fn.SUM(C.headcount)
        q = C.select(col.alias("key"), total.alias("headcount"), fn.COUNT(C.id).alias("cases"))
        if not include_done:
            q = q.where(SQL(RANKED_SQL))
        return [HeadcountGroup(*row) for row in q.group_by(col).order_by(total.desc(), col).limit(limit).tuples()]

    def quarantine(self, status: str | None = "open", limit: int = 100, offset: int = 0) -> list[Conflict]:
        """Conflicts, newest first. ``first_frame_id``/``first_text`` are what the ledger held when
        the conflict was raised (history); ``ledger_frame_id``/``ledger_text`` are what it holds for
        the case now, which an accepted correction may have changed since (None if no such case)."""
        Q, C = self.m.Quarantine, self.m.Case
        q = (Q.select(Q, C.frame_id.alias("ledger_frame_id"), C.frame_text.alias("ledger_text"))
             .join(C, JOIN.LEFT_OUTER, on=(C.case_key == Q.case_key)))
        if status:
            q = q.where(Q.status == status)
        return [Conflict(**row) for row in q.order_by(Q.id.desc()).limit(limit).offset(offset).dicts()]

    def count_quarantine(self, status: str | None = None) -> int:
        """Conflicts ever quarantined, open or resolved, or those of one ``status``."""
        Q = self.m.Quarantine
        q = Q.select()
        if status:
            q = q.where(Q.status == status)
        return q.count()

    def rejects(self, limit: int = 100, offset: int = 0) -> list[Reject]:
        R = self.m.Reject
        return [Reject(**row) for row in R.select().order_by(R.id.desc()).limit(limit).offset(offset).dicts()]

    def evictions(self, limit: int = 50) -> list[Eviction]:
        E = self.m.Eviction
        return [Eviction(**row) for row in E.select().order_by(E.id.desc()).limit(limit).dicts()]

    def activity(self, limit: int = 200, after_id: int = 0) -> list[Activity]:
        """Newest first; ``after_id`` fetches only what is new since the last look."""
        A = self.m.Activity
        return [Activity(**row) for row in
                A.select().where(A.id > after_id).order_by(A.id.desc()).limit(limit).dicts()]

    def arrivals_per_minute(self, minutes: int = 60, now: float | None = None) -> list[int]:
        """Frames per minute over the last ``minutes`` minutes, oldest first (all paths)."""
        now = time.time() if now is None else now
        end = int(now // 60)
        start = end - minutes + 1
        A = self.m.ArrivalMinute
        counts = dict(
            A.select(A.minute, fn.SUM(A.count))
            .where(A.minute >= start, A.minute <= end)
            .group_by(A.minute)
            .tuples()
        )
        return [int(counts.get(minute, 0)) for minute in range(start, end + 1)]

    # -- read queries for the operator console ---------------------------------------
    # Kept apart so the console's needs are visible at a glance; all read-only.
    def data_version(self) -> int:
        """Changes whenever another connection commits to the store: a cheap "anything new?" probe."""
        return self.db.data_version()

    def cases_by_arrival(self, limit: int = 100, offset: int = 0, descending: bool = True,
                         filter: str | None = None) -> list[Case]:
        """One page of the ledger in arrival (rowid) order, which stays instant on a big store."""
        C = self.m.Case
        order = C.id.desc() if descending else C.id.asc()
        q = self._case_filter(C.select(), filter).order_by(order).limit(limit).offset(offset)
        return [Case(**row) for row in self.mark_disputed(list(q.dicts()))]

    def retention_history(self, limit: int = 50) -> list[PolicyChange]:
        """Every policy change, newest first (exceptions are the rows with ``is_exception``)."""
        P = self.m.Policy
        return [PolicyChange(**row) for row in P.select().order_by(P.id.desc()).limit(limit).dicts()]

    def witnesses(self, now: float | None = None) -> Witnesses:
        """Dedup witnesses kept, the oldest one's age, and how many the policy has expired now."""
        S = self.m.SeenFrame
        now = time.time() if now is None else float(now)
        cutoff = now - self.retention_seconds()
        oldest = S.select(fn.MIN(S.first_seen)).scalar()
        due = S.select().where(S.first_seen < cutoff).count()
        return Witnesses(kept=self._total("seen_frames"), oldest=oldest, cutoff=cutoff, due=due)

    # -- whole tables streamed from one cursor, for the exports ----------------------------
    # Paging by offset would cost quadratic time on a big store.
    def ranking_rows(self, include_done: bool = False) -> Iterable[RankingRow]:
        """The whole dispatch order."""
        C = self.m.Case
        keys, ids = self.open_conflict_refs()
        fields = (C.frame_id, C.site, C.need, C.headcount, C.pri, C.first_seen, C.status, C.case_key)
        for *row, key in self._ranking_query(fields, include_done).tuples().iterator():
            yield RankingRow(*row, key in keys or row[0] in ids)

    def case_rows(self) -> Iterable[ExportCase]:
        """Every case in arrival order, each saying whether an open conflict concerns it."""
        C = self.m.Case
        keys, ids = self.open_conflict_refs()
        q = C.select(C.frame_id, C.case_key, C.site, C.need, C.headcount, C.pri, C.status, C.version,
                     C.first_seen, C.updated_at, C.source, C.frame_text).order_by(C.id)
        for fid, key, site, need, hc, pri, status, version, first_seen, updated, source, text in q.tuples().iterator():
            yield ExportCase(fid, site, need, hc, pri, status, key in keys or fid in ids, version, first_seen,
                             updated, source, text)

    def conflict_rows(self) -> Iterable[ConflictRow]:
        """Every conflict, open and resolved, oldest first."""
        Q = self.m.Quarantine
        q = Q.select(*(getattr(Q, name) for name in ConflictRow._fields)).order_by(Q.id)
        return (ConflictRow(*row) for row in q.tuples().iterator())

    def reject_rows(self) -> Iterable[RejectRow]:
        """Every reject, oldest first."""
        R = self.m.Reject
        q = R.select(*(getattr(R, name) for name in RejectRow._fields)).order_by(R.id)
        return (RejectRow(*row) for row in q.tuples().iterator())
