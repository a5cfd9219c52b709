"""The receiver: the one merge point every delivery path calls (SPEC §6).

``Receiver.ingest_many`` is the only code that writes the ledger. It takes a
batch, parses it with the pure functions, gathers what the store knows about
the batch's ids in a few set-based queries, decides every frame with
``core.decide``, and writes the results with ``executemany`` in one
transaction (R8: the dedup row and the applied case commit together or not at
all). Everything else here is a read query returning plain data.
"""

from __future__ import annotations

import logging
import time
from collections import Counter as Tally
from typing import Callable, Iterable, NamedTuple, Sequence

from .decide import CaseRef, Outcome, decide_fields, reject
from .frame import Frame, escape_text, parse
from .retention import RetentionError, check_retention
from .store import StoreError, connect, is_postgres, write_transaction

log = logging.getLogger("ussd.receiver")

CHUNK = 20_000  # frames per transaction
_IN_BATCH = 500  # ids per IN (...) lookup
ACTIVITY_KEEP = 5000  # rows of the live feed kept
SOURCE_MAX = 16


class Verdict(NamedTuple):
    """What happened to one offered frame."""

    frame_id: str
    outcome: Outcome
    reason: str
    source: str = "api"
    file: str | None = None
    line: int | None = None

    @property
    def alert(self) -> bool:
        """A new conflict: the operator must be told (a repeat of a queued one is not new)."""
        return self.outcome is Outcome.CONFLICT_QUARANTINED and self.reason != "already_quarantined"

    def as_dict(self) -> dict:
        return {
            "frame_id": self.frame_id,
            "outcome": self.outcome.value,
            "reason": self.reason,
            "source": self.source,
            "file": self.file,
            "line": self.line,
        }


def _payload_key(site: str, need: str, headcount: int, pri: int) -> str:
    return f"{site}|{need}|{headcount}|{pri}"


def _payload_from_key(key: str) -> tuple[str, str, int, int]:
    site, need, headcount, pri = key.split("|")
    return (site, need, int(headcount), int(pri))


def _chunks(seq: Sequence, size: int):
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


class Receiver:
    """Takes frames in exactly once on a durable store; see the module docstring."""

    def __init__(self, path: str):
        self.path = path
        self.db, self.m = connect(path)
        self._postgres = is_postgres(self.db)

    # -- lifecycle -------------------------------------------------------------
    def close(self) -> None:
        if not self.db.is_closed():
            self.db.close()

    def __enter__(self) -> "Receiver":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- low-level helpers (the one place that writes raw SQL) ------------------
    def _q(self, name: str) -> str:
        return f"{self.db.quote[0]}{name}{self.db.quote[1]}"

    def _insert(self, model, fields: Sequence[str], rows: list, on_conflict: str = "") -> None:
        if not rows:
            return
        table = self._q(model._meta.table_name)
        cols = ", ".join(self._q(model._meta.fields[f].column_name) for f in fields)
        if self._postgres and not on_conflict:
            # psycopg's executemany costs a round of Python work per row; COPY streams
            # the rows in C. Upserts (a handful of counter rows) keep executemany.
            with self.db.cursor().copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        marks = ", ".join([self.db.param] * len(fields))
        self.db.cursor().executemany(f"INSERT INTO {table} ({cols}) VALUES ({marks}) {on_conflict}", rows)

    def _add(self, model, key_fields: Sequence[str], value_field: str, rows: list) -> None:
        """Upsert-increment: ``value += n`` per key, inserting missing keys."""
        if not rows:
            return
        table = self._q(model._meta.table_name)
        value = self._q(value_field)
        keys = ", ".join(self._q(k) for k in key_fields)
        conflict = f"ON CONFLICT ({keys}) DO UPDATE SET {value} = {table}.{value} + excluded.{value}"
        self._insert(model, [*key_fields, value_field], rows, conflict)

    def _execute_many(self, sql: str, rows: list) -> None:
        if rows:
            self.db.cursor().executemany(sql.replace("?", self.db.param), rows)

    # -- ingest: the merge point ----------------------------------------------
    def ingest(self, frame_id, frame_text, now: float | None = None, source: str = "api") -> Verdict:
        return self.ingest_many([(frame_id, frame_text)], now=now, source=source)[0]

    def ingest_many(
        self,
        items: Iterable[Sequence],
        now: float | None = None,
        source: str = "api",
        within: Callable[[], None] | None = None,
    ) -> list[Verdict]:
        """Decide and record a batch; items are ``(frame_id, text)`` or ``(frame_id, text, file, line)``.

        ``within`` runs inside the last chunk's transaction, so a caller can
        commit its own progress (an inbox file's offset) with the frames.
        """
        if not isinstance(source, str) or not source.isidentifier() or len(source) > SOURCE_MAX:
            raise ValueError(f"bad source label {source!r}")
        items = list(items)
        verdicts: list[Verdict] = []
        if not items:
            if within is not None:
                with write_transaction(self.db):
                    within()
            return verdicts
        chunks = list(_chunks(items, CHUNK))
        for i, chunk in enumerate(chunks):
            stamp = time.time() if now is None else float(now)
            last = i == len(chunks) - 1
            verdicts.extend(self._ingest_chunk(chunk, stamp, source, within if last else None))
        return verdicts

    def _select_in(self, sql: str, values: list) -> list[tuple]:
        """Run ``sql`` (with one ``IN ({})`` slot) over ``values`` in slices; raw rows.

        Built by hand rather than through the query builder: for thousands of
        ids per batch, peewee's per-value SQL generation cost more than the
        lookups themselves.
        """
        rows: list[tuple] = []
        cursor = self.db.cursor()
        for part in _chunks(values, _IN_BATCH):
            marks = ", ".join([self.db.param] * len(part))
            cursor.execute(sql.format(marks), part)
            rows.extend(cursor.fetchall())
        return rows

    def _gather(self, frames: list[Frame]):
        """Set-based lookups of everything the batch's ids and case keys touch.

        Witnesses and cases are looked up for every frame; the quarantine and
        the settlements only for frames that hit one of those, since a frame
        with neither is new and cannot be in either.
        """
        seen = dict(
            self._select_in(
                "SELECT frame_id, frame_text FROM seen_frames WHERE frame_id IN ({})",
                list({f.frame_id for f in frames}),
            )
        )
        cases = {
            key: CaseRef(fid, text, (site, need, hc, pri))
            for key, fid, text, site, need, hc, pri in self._select_in(
                "SELECT case_key, frame_id, frame_text, site, need, headcount, pri FROM cases "
                "WHERE case_key IN ({})",
                list({f.case_key for f in frames}),
            )
        }
        hit_ids = list({f.frame_id for f in frames if f.frame_id in seen or f.case_key in cases})
        quarantined = set(
            self._select_in("SELECT frame_id, frame_text FROM quarantine WHERE frame_id IN ({})", hit_ids)
        )
        settled_texts: dict[str, set[str]] = {}
        settled_payloads: dict[str, set[tuple]] = {}
        for key, text, payload in self._select_in(
            "SELECT case_key, frame_text, payload FROM settlements WHERE case_key IN ({})", list(cases)
        ):
            settled_texts.setdefault(key, set()).add(text)
            settled_payloads.setdefault(key, set()).add(_payload_from_key(payload))
        return seen, quarantined, cases, settled_texts, settled_payloads

    def _ingest_chunk(self, chunk, now: float, source: str, within) -> list[Verdict]:
        results = [parse(item[0], item[1]) for item in chunk]
        verdicts: list[Verdict] = []
        append = verdicts.append
        seen_rows, case_rows, reject_rows = [], [], []
        seen_bumps: dict[str, int] = {}
        new_quarantine: dict[tuple[str, str], list] = {}
        quarantine_bumps: dict[tuple[str, str], int] = {}
        added_cases = added_headcount = 0
        empty_set: frozenset = frozenset()
        # A file label comes from outside (a path given to `ingest`): stored escaped unless it is
        # printable ASCII already (the inbox's labels are). Every item of one file carries the
        # same string, so it is checked once per file.
        raw_file = shown_file = None
        # Enum member lookups and ``.value`` are slow descriptors; hoist them out of the loop.
        APPLIED, DUPLICATE, CONFLICT = Outcome.APPLIED, Outcome.DUPLICATE, Outcome.CONFLICT_QUARANTINED
        value_of = {o: o.value for o in Outcome}
        with write_transaction(self.db):
            seen, quarantined, cases, settled_texts, settled_payloads = self._gather(
                [f for f in results if f.__class__ is Frame and f.trailer_ok]
            )
            seen_get, cases_get = seen.get, cases.get
            for result, item in zip(results, chunk):
                file, line = (item[2], item[3]) if len(item) > 2 else (None, None)
                if file is not None:
                    if file is not raw_file:
                        safe = isinstance(file, str) and file.isascii() and file.isprintable()
                        raw_file, shown_file = file, file if safe else escape_text(file, 200)
                    file = shown_file
                if result.__class__ is not Frame or not result.trailer_ok:
                    fid, text = item[0], item[1]
                    bad = reject(result)
                    shown_id = escape_text("" if fid is None else fid, 80)
                    reject_rows.append(
                        (now, source, value_of[bad.outcome], bad.reason, shown_id,
                         escape_text("" if text is None else text, 200), file, line)
                    )
                    # A rejected id may carry anything; only its escaped form travels on.
                    append(Verdict(shown_id, bad.outcome, bad.reason, source, file, line))
                    continue
                frame: Frame = result
                frame_id, ftext, key = frame.frame_id, frame.text, frame.case_key
                seen_text = seen_get(frame_id)
                case = cases_get(key)
                outcome, reason, record_seen = decide_fields(
                    frame,
                    seen_text,
                    case,
                    settled_texts.get(key, empty_set),
                    settled_payloads.get(key, empty_set),
                    (frame_id, ftext) in quarantined,
                )
                if record_seen:
                    seen_rows.append((frame_id, ftext, ftext[-2:], now, now, 1, source))
                    seen[frame_id] = ftext
                elif outcome is DUPLICATE and seen_text == ftext:
                    seen_bumps[frame_id] = seen_bumps.get(frame_id, 0) + 1
                if outcome is APPLIED:
                    case_rows.append(
                        (key, frame_id, ftext, frame.seq, frame.site, frame.need,
                         frame.headcount, frame.pri, now, now, source, 1)
                    )
                    cases[key] = CaseRef(frame_id, ftext, frame.payload)
                    added_cases += 1
                    added_headcount += frame.headcount
                elif outcome is CONFLICT:
                    qkey = (frame_id, ftext)
                    if qkey in new_quarantine:
                        new_quarantine[qkey][8] += 1
                    elif qkey in quarantined:
                        quarantine_bumps[qkey] = quarantine_bumps.get(qkey, 0) + 1
                    else:
                        if seen_text is not None:
                            first_id, first_text = frame_id, seen_text
                        else:
                            first_id, first_text = case.frame_id, case.text
                        new_quarantine[qkey] = [
                            frame_id, key, ftext, first_id, first_text,
                            reason, now, now, 1, source, "open",
                        ]
                        quarantined.add(qkey)
                        log.info(
                            "conflict quarantined: %s %s (%s; first was %s %s)",
                            frame_id, ftext, reason, first_id, first_text,
                        )
                append(Verdict(frame_id, outcome, reason, source, file, line))
            outcomes = Tally(value_of[v[1]] for v in verdicts)
            # Only the newest rows of the feed are kept, so older ones are never written.
            activity_rows = [
                (now, source, v[0], value_of[v[1]], v[2], v[4], v[5]) for v in verdicts[-ACTIVITY_KEEP:]
            ]
            self._write(
                now, source, seen_rows, case_rows, reject_rows, activity_rows, seen_bumps,
                new_quarantine, quarantine_bumps, outcomes, added_cases, added_headcount,
            )
            if within is not None:
                within()
        return verdicts

    def _write(self, now, source, seen_rows, case_rows, reject_rows, activity_rows, seen_bumps,
               new_quarantine, quarantine_bumps, outcomes, added_cases, added_headcount) -> None:
        m = self.m
        self._insert(
            m.SeenFrame,
            ["frame_id", "frame_text", "crc8", "first_seen", "last_seen", "seen_count", "last_source"],
            seen_rows,
        )
        self._insert(
            m.Case,
            ["case_key", "frame_id", "frame_text", "seq", "site", "need", "headcount", "pri",
             "first_seen", "updated_at", "source", "version"],
            case_rows,
        )
        self._insert(
            m.Quarantine,
            ["frame_id", "case_key", "frame_text", "first_frame_id", "first_text", "reason",
             "first_seen", "last_seen", "seen_count", "source", "status"],
            list(new_quarantine.values()),
        )
        self._insert(
            m.Reject,
            ["ts", "source", "outcome", "reason", "frame_id", "frame_text", "file", "line"],
            reject_rows,
        )
        self._insert(m.Activity, ["ts", "source", "frame_id", "outcome", "reason", "file", "line"], activity_rows)
        self._execute_many(
            "UPDATE seen_frames SET seen_count = seen_count + ?, last_seen = ?, last_source = ? "
            "WHERE frame_id = ?",
            [(n, now, source, fid) for fid, n in seen_bumps.items()],
        )
        self._execute_many(
            "UPDATE quarantine SET seen_count = seen_count + ?, last_seen = ? "
            "WHERE frame_id = ? AND frame_text = ?",
            [(n, now, fid, text) for (fid, text), n in quarantine_bumps.items()],
        )
        self._add(m.Counter, ["source", "outcome"], "count", [(source, o, n) for o, n in outcomes.items()])
        self._add(m.ArrivalMinute, ["minute", "source"], "count", [(int(now // 60), source, sum(outcomes.values()))])
        totals = [("cases", added_cases), ("headcount", added_headcount), ("seen_frames", len(seen_rows))]
        self._add(m.Total, ["name"], "value", [t for t in totals if t[1]])
        self.db.execute_sql(
            "DELETE FROM activity WHERE id <= (SELECT MAX(id) FROM activity) - ?".replace("?", self.db.param),
            (ACTIVITY_KEEP,),
        )

    # -- retention (R7) --------------------------------------------------------
    def retention_seconds(self) -> int:
        return self.retention()["retention_seconds"]

    def retention(self) -> dict:
        """The policy in force, as plain data: only a signed one above the floor (core.retention_guard).

        ``fault`` says why a newer policy row is not applied, or is ``None``.
        """
        from .retention_guard import policy_in_force

        return policy_in_force(self)

    def set_retention(self, seconds: int, set_by: str = "operator", reason: str = "",
                      signed: bool = False, audit_id: int | None = None, now: float | None = None) -> dict:
        """Record a signed policy change (``core.actions.set_retention`` signs it first).

        Refused below 72 h, below 30 days unless signed, and without its audit
        entry: a row without one would never be applied.
        """
        seconds = int(seconds)
        is_exception = check_retention(seconds, signed)
        if audit_id is None:
            raise RetentionError("a retention change is signed by an operator: use `ussd-console retention set`")
        with write_transaction(self.db):
            if seconds == self.retention_seconds() and self.m.Policy.select().exists():
                return self.retention()
            self.m.Policy.create(
                retention_seconds=seconds, set_at=time.time() if now is None else now,
                set_by=set_by, reason=reason, is_exception=is_exception, audit_id=audit_id,
            )
        log.info("retention set to %ss by %s", seconds, set_by)
        return self.retention()

    def evict(self, now: float | None = None, started_by: str = "api", chunk: int = 2000) -> int:
        """Age-only eviction of dedup witnesses, in short transactions; logged (R7)."""
        m = self.m
        now = time.time() if now is None else float(now)
        in_force = self.retention()
        if in_force["fault"]:
            log.warning("%s", in_force["fault"])
        policy = in_force["retention_seconds"]
        cutoff = now - policy
        removed = 0
        oldest = newest = None
        S = m.SeenFrame
        while True:
            with write_transaction(self.db):
                rows = list(
                    S.select(S.frame_id, S.first_seen)
                    .where(S.first_seen < cutoff)
                    .order_by(S.first_seen)
                    .limit(chunk)
                    .tuples()
                )
                if not rows:
                    break
                for part in _chunks([r[0] for r in rows], _IN_BATCH):
                    S.delete().where(S.frame_id.in_(part)).execute()
                self._add(m.Total, ["name"], "value", [("seen_frames", -len(rows))])
            if oldest is None:
                oldest = rows[0][1]
            newest = rows[-1][1]
            removed += len(rows)
            if len(rows) < chunk:
                break
        if removed or started_by != "schedule":
            with write_transaction(self.db):
                m.Eviction.create(
                    ran_at=now, retention_seconds=policy, cutoff=cutoff, removed=removed,
                    oldest=oldest, newest=newest, started_by=started_by,
                )
            log.info("eviction by %s: %d removed (cutoff %.0f, policy %ss)", started_by, removed, cutoff, policy)
        return removed

    # -- read queries ------------------------------------------------------------
    def is_seen(self, frame_id: str) -> bool:
        S = self.m.SeenFrame
        return S.select().where(S.frame_id == frame_id).exists()

    def _total(self, name: str) -> int:
        T = self.m.Total
        row = T.select(T.value).where(T.name == name).first()
        return row.value if row else 0

    def headcount_total(self) -> int:
        return self._total("headcount")

    def per_source(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        C = self.m.Counter
        for source, outcome, count in C.select(C.source, C.outcome, C.count).tuples():
            out.setdefault(source, {})[outcome] = count
        return out

    def totals(self) -> dict:
        """Header and ``status`` figures, all O(1) or indexed."""
        by_outcome: Tally = Tally()
        for counts in self.per_source().values():
            by_outcome.update(counts)
        Q = self.m.Quarantine
        policy = self.retention()
        return {
            "cases": self._total("cases"),
            "headcount_total": self._total("headcount"),
            "duplicates": by_outcome["DUPLICATE"],
            "conflicts": by_outcome["CONFLICT_QUARANTINED"],
            "conflicts_open": Q.select().where(Q.status == "open").count(),
            "rejects": by_outcome["REJECT_BAD_FORMAT"] + by_outcome["REJECT_BAD_CRC"],
            "applied": by_outcome["APPLIED"],
            "frames": sum(by_outcome.values()),
            "seen_frames": self._total("seen_frames"),
            "retention_days": round(policy["retention_seconds"] / 86400, 3),
            "retention_fault": policy["fault"],
        }

    CASE_SORTS = ("first_seen", "frame_id", "site", "need", "headcount", "pri", "updated_at")

    def _case_filter(self, query, text: str | None):
        C = self.m.Case
        if text:
            like = f"%{text}%"
            query = query.where(C.site.contains(text) | C.need.contains(text) | C.frame_id.contains(text))
        return query

    def cases(self, limit: int = 100, offset: int = 0, sort: str = "first_seen",
              descending: bool = True, filter: str | None = None) -> list[dict]:
        """One page of the applied ledger."""
        C = self.m.Case
        if sort not in self.CASE_SORTS:
            raise ValueError(f"cannot sort cases by {sort!r}; choose one of {', '.join(self.CASE_SORTS)}")
        col = getattr(C, sort)
        order = [col.desc() if descending else col.asc(), C.id.desc() if descending else C.id.asc()]
        q = self._case_filter(C.select(), filter).order_by(*order).limit(limit).offset(offset)
        return list(q.dicts())

    def count_cases(self, filter: str | None = None) -> int:
        if not filter:
            return self._total("cases")
        return self._case_filter(self.m.Case.select(), filter).count()

    def case_history(self, case_id: int) -> list[dict]:
        H = self.m.CaseHistory
        return list(H.select().where(H.case == case_id).order_by(H.id).dicts())

    def ranking(self, limit: int = 100, offset: int = 0) -> list[dict]:
        """The dispatch order: pri desc, headcount desc, first seen."""
        C = self.m.Case
        q = (
            C.select(C.id, C.frame_id, C.site, C.need, C.headcount, C.pri, C.first_seen)
            .order_by(C.pri.desc(), C.headcount.desc(), C.first_seen.asc(), C.id.asc())
            .limit(limit)
            .offset(offset)
        )
        rows = list(q.dicts())
        for i, row in enumerate(rows, start=offset + 1):
            row["rank"] = i
        return rows

    def headcount_by(self, field: str, limit: int = 20) -> list[dict]:
        """Headcount per need or per site, largest first."""
        from peewee import fn

        C = self.m.Case
        if field not in ("need", "site"):
            raise ValueError("headcount_by takes 'need' or 'site'")
        col = getattr(C, field)
        total = fn.SUM(C.headcount)
        q = (
            C.select(col.alias("key"), total.alias("headcount"), fn.COUNT(C.id).alias("cases"))
            .group_by(col)
            .order_by(total.desc(), col)
            .limit(limit)
        )
        return list(q.dicts())

    def quarantine(self, status: str | None = "open", limit: int = 100, offset: int = 0) -> list[dict]:
        Q = self.m.Quarantine
        q = Q.select()
        if status:
            q = q.where(Q.status == status)
        return list(q.order_by(Q.id.desc()).limit(limit).offset(offset).dicts())

    def quarantine_item(self, qid: int) -> dict | None:
        Q = self.m.Quarantine
        return Q.select().where(Q.id == qid).dicts().first()

    def rejects(self, limit: int = 100, offset: int = 0) -> list[dict]:
        R = self.m.Reject
        return list(R.select().order_by(R.id.desc()).limit(limit).offset(offset).dicts())

    def evictions(self, limit: int = 50) -> list[dict]:
        E = self.m.Eviction
        return list(E.select().order_by(E.id.desc()).limit(limit).dicts())

    def activity(self, limit: int = 200, after_id: int = 0) -> list[dict]:
        """Newest first; ``after_id`` fetches only what is new since the last look."""
        A = self.m.Activity
        return list(A.select().where(A.id > after_id).order_by(A.id.desc()).limit(limit).dicts())

    def arrivals_per_minute(self, minutes: int = 60, now: float | None = None) -> list[int]:
        """Frames per minute over the last ``minutes`` minutes, oldest first (all paths)."""
        from peewee import fn

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

    # -- read queries for the operator console (issue 4) --------------------------
    # Kept apart so the console's needs are visible at a glance; all read-only.
    def data_version(self) -> int:
        """Changes whenever another connection commits to the store: a cheap "anything new?" probe."""
        if self._postgres:
            # The snapshot's xmax moves on with every commit on the server (a superset of
            # this store's commits: an extra refresh at worst, never a missed one).
            return int(self.db.execute_sql("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()[0])
        return self.db.execute_sql("PRAGMA data_version").fetchone()[0]

    def cases_by_arrival(self, limit: int = 100, offset: int = 0, descending: bool = True,
                         filter: str | None = None) -> list[dict]:
        """One page of the ledger in arrival (rowid) order, which stays instant on a big store."""
        C = self.m.Case
        order = C.id.desc() if descending else C.id.asc()
        q = self._case_filter(C.select(), filter).order_by(order).limit(limit).offset(offset)
        return list(q.dicts())

    def retention_history(self, limit: int = 50) -> list[dict]:
        """Every policy change, newest first (exceptions are the rows with ``is_exception``)."""
        P = self.m.Policy
        return list(P.select().order_by(P.id.desc()).limit(limit).dicts())

    def witnesses(self, now: float | None = None) -> dict:
        """Dedup witnesses kept, the oldest one's age, and how many the policy has expired now."""
        from peewee import fn

        S = self.m.SeenFrame
        now = time.time() if now is None else float(now)
        cutoff = now - self.retention_seconds()
        oldest = S.select(fn.MIN(S.first_seen)).scalar()
        due = S.select().where(S.first_seen < cutoff).count()
        return {"kept": self._total("seen_frames"), "oldest": oldest, "cutoff": cutoff, "due": due}

    def ranking_rows(self) -> Iterable[tuple]:
        """The whole dispatch order streamed from one cursor (for exports), as
        ``(frame_id, site, need, headcount, pri, first_seen)``; paging by offset
        would cost quadratic time on a big store."""
        C = self.m.Case
        q = (
            C.select(C.frame_id, C.site, C.need, C.headcount, C.pri, C.first_seen)
            .order_by(C.pri.desc(), C.headcount.desc(), C.first_seen.asc(), C.id.asc())
            .tuples()
        )
        return q.iterator()
