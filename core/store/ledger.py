"""Ledger writes: the ingest, the one merge point every delivery path calls.

``ingest_many`` is the only code that writes the ledger. It parses a batch
with the pure ``core.rules.frame.parse``, gathers what the store knows about
the batch's ids in a few set-based queries (``_gather``), lets the pure
``core.rules.batch.BatchState`` decide every frame (``decide_all``: one in-order
pass, the common verdicts inline, the rest through ``decide``),
and writes the rows it holds in one transaction per call (R8: a frame's dedup
row and its applied case commit together or not at all; one commit writes each
dirtied page of the case indexes once, where slices of the call wrote them once
each): on SQLite the applied frames' cases in one ``executemany`` and their
witnesses copied from them by ``INSERT ... SELECT``, on PostgreSQL with
``unnest`` arrays and ``ON CONFLICT DO NOTHING RETURNING``, so receivers sharing
the store settle "first arrival" between themselves through the unique keys and
a batch that lost a race is decided again. ``fast_ingest = False`` keeps the reference path (the pure
``decide_batch``, plain inserts, the exclusive lock) that
tests/test_fast_path_differential.py compares the fast path with.
"""

from __future__ import annotations

import gc
import json
import logging
import random
import time
from functools import partial
from itertools import compress, count
from operator import itemgetter, not_
from typing import Callable, Iterable, Sequence

from core.rules.batch import (
    ACTIVITY_KEEP, ActivityRow, CaseRow, Facts, Offer, QuarantineRow, RejectRow, SeenRow, Verdict, Writes,
    as_offers, decide_batch, decide_batch_fast, needs_facts,
)
from core.rules import events
from core.rules.decide import CaseRef, payload_from_key
from core.rules.frame import Frame
from core.rules.parse_batch import parse_all as _parse_all
from core.rules.text import one_line

from .backend import PG_WRITE_LOCK
from .database import is_database_error, write_transaction
from .outbox import record_many as record_events
from .totals import add_counts, bump_total

log = logging.getLogger("ussd.receiver")

# Frames a delivery path hands one ``ingest_many`` call at most (the inbox's default ``batch_lines``,
# ``ingest``'s slices of a file, the gateway committer's group): one call holds its frames, parsed
# frames, verdicts and rows in memory until its one commit: on the bench's mix a peak of 81 MiB
# of Python objects for 100,000 frames (850 bytes a frame, beyond the offered items themselves;
# the process grew by 88 MiB with SQLite's page cache), measured with tracemalloc and ru_maxrss.
HANDOVER_FRAMES = 100_000
SOURCE_MAX = 16
RACE_RETRIES = 50  # PostgreSQL: a batch decided again after losing a race to another receiver
# peewee field types -> PostgreSQL array element types, for ``unnest`` inserts
_PG_TYPES = {"TEXT": "text", "DOUBLE": "float8", "INT": "int8", "BIGINT": "int8", "AUTO": "int8", "BOOL": "bool"}
_RACE_STATES = {"40001", "40P01"}  # serialization_failure, deadlock_detected


class LostRace(Exception):
    """Another receiver committed a row this batch claimed (PostgreSQL): decide the batch again."""


def _is_race(exc: BaseException) -> bool:
    """A lost claim, a serialization failure or a deadlock, raw or wrapped by peewee."""
    seen = exc
    for _ in range(6):
        if seen is None:
            return False
        if isinstance(seen, LostRace) or getattr(seen, "sqlstate", None) in _RACE_STATES:
            return True
        inner = seen.args[0] if seen.args and isinstance(seen.args[0], BaseException) else None
        seen = seen.__cause__ or inner or seen.__context__
    return False


_frame_id, _case_key = itemgetter(0), itemgetter(8)  # a ``Frame``'s fields, read in bulk (and a witness's id)
_frame_id_of_case = itemgetter(1)  # a ``CaseRow``'s
_case_bound = itemgetter(slice(0, 10))  # a ``CaseRow`` less its source and version (the batch's own)
_case_ref = partial(tuple.__new__, CaseRef)  # a ``CaseRef`` from one tuple, no Python code per row


def _slices(seq: Sequence, size: int):
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


class LedgerWrites:
    """The writing half of ``Receiver`` (needs ``self.db`` and ``self.m``)."""

    # The fast path decides the common verdicts inline and writes through set-based SQL; the
    # reference (``decide_batch``, one ``decide`` per frame, plain inserts under the exclusive
    # lock) is kept for the differential test and the benchmark's A/B.
    fast_ingest = True
    chunk_frames: int | None = None  # frames per transaction; None: the whole call in one

    # -- low-level helpers (the one place that writes raw SQL) ------------------
    def _insert(self, model, fields: Sequence[str], rows: list, on_conflict: str = "") -> None:
        meta = model._meta
        self.db.insert_rows(meta.table_name, [meta.fields[f].column_name for f in fields], rows, on_conflict)

    def _add(self, model, key_fields: Sequence[str], value_field: str, rows: list) -> None:
        """Upsert-increment: ``value += n`` per key, inserting missing keys."""
        add_counts(self.db, model, key_fields, value_field, rows)

    def _execute_many(self, sql: str, rows: list) -> None:
        if rows:
            self.db.cursor().executemany(sql.replace("?", self.db.param), rows)

    # -- ingest: the merge point ----------------------------------------------
    def ingest(self, frame_id, frame_text, now: float | None = None, source: str = "api") -> Verdict:
        return self.ingest_many([Offer(frame_id, frame_text)], now=now, source=source)[0]

    def ingest_many(
        self,
        items: Iterable[Sequence],
        now: float | None = None,
        source: str = "api",
        within: Callable[[], None] | None = None,
    ) -> list[Verdict]:
        """Decide and record a batch of ``Offer``s (plain ``(frame_id, text[, file, line])`` tuples
        are converted once, here).

        ``within`` runs inside the last chunk's transaction, so a caller can
        commit its own progress (an inbox file's offset) with the frames.
        """
        if not isinstance(source, str) or not source.isidentifier() or len(source) > SOURCE_MAX:
            raise ValueError(f"bad source label {source!r}")
        # A batch builds several tuples per frame and frees them with the batch: nothing for the
        # cyclic collector to find, yet its passes over every live tuple cost a quarter of the
        # ingest. It is off for the batch and back on after (if it was on: another thread's batch
        # may have it off).
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._ingest_all(as_offers(items), now, source, within)
        finally:
            if collecting:
                gc.enable()

    def _ingest_all(self, items: list[Offer], now: float | None, source: str, within) -> list[Verdict]:
        verdicts: list[Verdict] = []
        if not items:
            if within is not None:
                with write_transaction(self.db):
                    within()
            return verdicts
        done: dict = {}  # (id, text) -> parsed, for the whole call: a re-send is parsed once
        parts = list(_slices(items, self.chunk_frames or len(items)))
        for i, chunk in enumerate(parts):
            stamp = time.time() if now is None else float(now)
            last = i == len(parts) - 1
            verdicts.extend(self._ingest_chunk(chunk, _parse_all(chunk, done), stamp, source, within if last else None))
        return verdicts

    def _lookup(self, columns: str, table: str, key: str, values: Iterable[str], also: str = "") -> list[tuple]:
        """``columns`` of ``table``'s rows whose ``key`` is one of ``values``: one statement, raw rows.

        Built by hand rather than through the query builder: for thousands of
        ids per batch, peewee's per-value SQL generation cost more than the
        lookups themselves. SQLite walks the values as one JSON array
        (``json_each``) in sorted order, seeking the key's index for each (a
        sorted walk stays in the pages it has just read: measured 2-3x faster
        than slices of ``IN (?, ...)``); PostgreSQL takes them as one array.
        """
        values = sorted(values)
        if not values:
            return []
        cursor = self.db.cursor()
        listed = ", ".join(f"t.{c.strip()}" for c in columns.split(","))
        if self.db.dialect == "postgresql":
            cursor.execute(f"SELECT {listed} FROM {table} t WHERE t.{key} = ANY(%s){' AND ' + also if also else ''}",
                           (values,))
        else:
            cursor.execute(f"SELECT {listed} FROM json_each(?) AS j CROSS JOIN {table} AS t ON t.{key} = j.value"
                           f"{' WHERE ' + also if also else ''}", (json.dumps(values),))
        return cursor.fetchall()

    def _gather(self, frames: list[Frame]) -> Facts:
        """Set-based lookups of everything the batch's ids and case keys touch.

        Witnesses are looked up for every frame, cases only for frames with no
        witness (a frame with one is decided on its witness alone, and a later
        frame of its key with no witness asks for the key itself); the
        quarantine and the settlements only for frames that hit one of those,
        since a frame with neither is new and cannot be in either. A settlement
        counts only where its case exists, as when every key's case was looked
        up. Built with ``map``/``zip`` (no Python code per frame or row: this
        runs for every batch).
        """
        seen = dict(self._lookup("frame_id, frame_text", "seen_frames", "frame_id", set(map(_frame_id, frames))))
        witnessed = list(map(seen.__contains__, map(_frame_id, frames)))
        rows = self._lookup("case_key, frame_id, frame_text, site, need, headcount, pri", "cases", "case_key",
                            set(compress(map(_case_key, frames), map(not_, witnessed))))
        cases: dict[str, CaseRef] = {}
        hit_ids = set(seen)
        if rows:
            keys, ids, texts, sites, needs, heads, pris = zip(*rows)
            cases = dict(zip(keys, map(_case_ref, zip(ids, texts, zip(sites, needs, heads, pris)))))
            hit_ids.update(compress(map(_frame_id, frames), map(cases.__contains__, map(_case_key, frames))))
        quarantined = set(self._lookup("frame_id, frame_text", "quarantine", "frame_id", hit_ids))
        settled_texts: dict[str, set[str]] = {}
        settled_payloads: dict[str, set[tuple]] = {}
        asked = set(cases).union(compress(map(_case_key, frames), witnessed))
        for key, text, payload in self._lookup("case_key, frame_text, payload", "settlements", "case_key", asked,
                                               also="EXISTS (SELECT 1 FROM cases c WHERE c.case_key = t.case_key)"):
            settled_texts.setdefault(key, set()).add(text)
            settled_payloads.setdefault(key, set()).add(payload_from_key(payload))
        return Facts(seen, quarantined, cases, settled_texts, settled_payloads)

    def _ingest_chunk(self, chunk: list[Offer], results: list, now: float, source: str, within) -> list[Verdict]:
        asked = needs_facts(results)
        if not self.fast_ingest:
            return self._ingest_chunk_reference(chunk, results, asked, now, source, within)
        for attempt in range(RACE_RETRIES + 1):
            try:
                with write_transaction(self.db, shared=True):
                    verdicts, writes = decide_batch_fast(chunk, results, self._gather(asked), now, source)
                    self._write(now, source, writes)
                    if within is not None:
                        within()
                break
            except Exception as exc:
                # PostgreSQL only: another receiver won a row this batch decided on, or the two
                # deadlocked. Rolled back whole; decided again on what the winner committed.
                if attempt == RACE_RETRIES or not _is_race(exc):
                    raise
                log.debug("ingest raced another receiver (%s); deciding the batch again", type(exc).__name__)
                time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        if self.db.dialect == "postgresql":
            self._prune_activity_shared()
        self._told(writes)
        return verdicts

    def _told(self, writes: Writes) -> None:
        """Told once, after the commit: a transaction that fails and is retried logged nothing."""
        for row in writes.new_quarantine:
            log.info("conflict quarantined: %s %s (%s; first was %s %s)", row.frame_id, row.frame_text,
                     row.reason, row.first_frame_id, row.first_text)

    def _ingest_chunk_reference(self, chunk, results, asked, now: float, source: str, within) -> list[Verdict]:
        """The reference ingest: the pure ``decide_batch`` and plain inserts under the store's
        exclusive write lock, as the receiver worked before the fast path. Kept so the
        differential test and ``make bench`` compare the fast path with it."""
        with write_transaction(self.db):
            verdicts, writes = decide_batch(chunk, results, self._gather(asked), now, source)
            self._write_reference(now, source, writes)
            if within is not None:
                within()
        self._told(writes)
        return verdicts

    def _write_reference(self, now: float, source: str, w: Writes) -> None:
        m = self.m
        record_events(self.db, [events.conflict(row) for row in w.new_quarantine], at=now)
        self._insert(m.SeenFrame, SeenRow._fields, w.seen_rows)
        self._insert(m.Case, CaseRow._fields, w.case_rows)
        self._insert(m.Quarantine, QuarantineRow._fields, w.new_quarantine)
        self._insert(m.Reject, RejectRow._fields, w.reject_rows)
        self._insert(m.Activity, ActivityRow._fields, w.activity_rows)
        self._bump_resends(now, source, w)
        self._add(m.Counter, ["source", "outcome"], "count", [(source, o, n) for o, n in w.outcomes.items()])
        self._add(m.ArrivalMinute, ["minute", "source"], "count", [(int(now // 60), source, sum(w.outcomes.values()))])
        bump_total(self.db, m, [("cases", w.added_cases), ("headcount", w.added_headcount),
                                ("seen_frames", len(w.seen_rows))])
        self._prune_activity()

    def _claim(self, model, fields: Sequence[str], rows: list, key) -> None:
        """Insert rows that each claim a unique key (a witness, a case, a queued conflict).

        On SQLite the batch holds the one write lock, so every claim is won.
        On PostgreSQL rows go in sorted by ``key`` (two receivers wait for each
        other's rows in one order, never in a cycle); ``ON CONFLICT DO NOTHING
        RETURNING`` says which were won, and a claim lost to another receiver
        means the batch decided on facts that were out of date: ``LostRace``
        rolls it back to be decided again.
        """
        if not rows:
            return
        meta = model._meta
        columns = [meta.fields[f].column_name for f in fields]
        has_id = "id" in meta.fields and meta.fields["id"].field_type == "AUTO"
        if self.db.dialect != "postgresql":
            # ids in arrival order; a table keyed by its text alone takes its rows sorted (a big
            # unique index grows slower under random-order inserts)
            self.db.insert_rows(meta.table_name, columns, rows if has_id else sorted(rows, key=key))
            return
        types = [_PG_TYPES[meta.fields[f].field_type] for f in fields]
        if has_id:
            # ids in arrival order, as one writer would give them, though the rows go in by key
            cursor = self.db.cursor()
            cursor.execute(f"SELECT nextval(pg_get_serial_sequence('{meta.table_name}', 'id')) "
                           "FROM generate_series(1, %s)", (len(rows),))
            ids = [r[0] for r in cursor.fetchall()]
            rows = [(i, *row) for i, row in zip(ids, rows)]
            columns, types = ["id", *columns], ["int8", *types]
            order = sorted(rows, key=lambda row: key(row[1:]))
        else:
            order = sorted(rows, key=key)
        won = self.db.claim_rows(meta.table_name, columns, types, order)
        if won != len(rows):
            raise LostRace(f"{len(rows) - won} of {len(rows)} {meta.table_name} rows were claimed by another receiver")

    def _write(self, now: float, source: str, w: Writes) -> None:
        m = self.m
        by_first = itemgetter(0)
        # The claims first, in one table order for every writer (see ``_claim``).
        seen_rows = w.seen_rows
        staged = self.db.dialect != "postgresql" and bool(w.case_rows)
        if staged:
            seen_rows = self._stage_applied(w, seen_rows)
        self._claim(m.SeenFrame, SeenRow._fields, seen_rows, by_first)
        if not staged:
            self._claim(m.Case, CaseRow._fields, w.case_rows, by_first)
        self._claim(m.Quarantine, QuarantineRow._fields, w.new_quarantine, itemgetter(0, 2))
        # The alerts commit with their conflicts.
        record_events(self.db, [events.conflict(row) for row in w.new_quarantine], at=now)
        # Each row type's fields are its table's insert columns (core.rules.batch).
        self._insert(m.Reject, RejectRow._fields, w.reject_rows)
        self._insert(m.Activity, ActivityRow._fields, w.activity_rows)
        if self.db.dialect == "postgresql":
            self._bump_postgres(now, source, w)
        else:
            self._bump_sqlite(now, source, w)
        self._add(m.Counter, ["source", "outcome"], "count", [(source, o, n) for o, n in w.outcomes.items()])
        self._add(m.ArrivalMinute, ["minute", "source"], "count", [(int(now // 60), source, sum(w.outcomes.values()))])
        totals = [("cases", w.added_cases), ("headcount", w.added_headcount), ("seen_frames", len(w.seen_rows))]
        bump_total(self.db, m, totals)
        if self.db.dialect != "postgresql":
            self._prune_activity()

    def _bump_postgres(self, now: float, source: str, w: Writes) -> None:
        """The re-sends' counts in two statements per table, not one per row: the rows are locked
        first in key order (``ORDER BY ... FOR UPDATE`` locks as it sorts), so receivers that
        bump the same witnesses wait in one order, then one ``UPDATE ... FROM unnest`` adds."""
        cursor = self.db.cursor()
        if w.seen_bumps:
            ids, counts = zip(*sorted(w.seen_bumps.items()))
            cursor.execute("SELECT 1 FROM seen_frames WHERE frame_id = ANY(%s) ORDER BY frame_id FOR UPDATE",
                           (list(ids),))
            cursor.execute(
                "UPDATE seen_frames s SET seen_count = s.seen_count + v.n, last_seen = %s, last_source = %s "
                "FROM unnest(%s::text[], %s::int8[]) AS v(fid, n) WHERE s.frame_id = v.fid",
                (now, source, list(ids), list(counts)),
            )
        if w.quarantine_bumps:
            keys, counts = zip(*sorted(w.quarantine_bumps.items()))
            ids, texts = [k[0] for k in keys], [k[1] for k in keys]
            cursor.execute(
                "SELECT 1 FROM quarantine q JOIN unnest(%s::text[], %s::text[]) AS v(fid, t) "
                "ON q.frame_id = v.fid AND q.frame_text = v.t ORDER BY q.frame_id, q.frame_text FOR UPDATE OF q",
                (ids, texts),
            )
            cursor.execute(
                "UPDATE quarantine q SET seen_count = q.seen_count + v.n, last_seen = %s "
                "FROM unnest(%s::text[], %s::text[], %s::int8[]) AS v(fid, t, n) "
                "WHERE q.frame_id = v.fid AND q.frame_text = v.t",
                (now, ids, texts, list(counts)),
            )

    def _stage_applied(self, w: Writes, seen_rows: list) -> list:
        """SQLite: the applied frames' cases in one ``executemany``, their witnesses copied from them.

        The cases go in arrival order with the ids one insert each would give
        (next after the highest), so the table's own b-tree, the biggest, takes
        them as appends (sorting them by case key instead scattered it:
        measured slower); the batch's source and version are written into the
        statement, not bound per row. Then one ``INSERT ... SELECT``, run in C,
        copies the new cases' rows into witnesses sorted by id (a new frame's
        witness is its case row's id, text and times: ``SeenRow`` of a ``NEW``),
        with the re-sends ``BatchState.fold_resends`` counted in their rows
        joined from a temporary table. Returns the witnesses of frames that
        were not applied (re-ranks, frames after eviction), for the plain insert.
        """
        case_rows = w.case_rows
        source = case_rows[0][10]
        cursor = self.db.cursor()
        base = cursor.execute("SELECT COALESCE(MAX(id), 0) FROM cases").fetchone()[0]
        rows = map(tuple.__add__, zip(count(base + 1)), map(_case_bound, case_rows))
        cursor.executemany(f"INSERT INTO cases (id, {', '.join(CaseRow._fields)}) "
                           f"VALUES ({', '.join('?' * 11)}, '{source}', 1)", rows)
        counted = ""
        if w.folded:
            cursor.execute("CREATE TEMP TABLE IF NOT EXISTS resent_new (frame_id TEXT PRIMARY KEY, "
                           "seen_count INTEGER NOT NULL) WITHOUT ROWID")
            cursor.execute("INSERT INTO resent_new SELECT key, value FROM json_each(?)", (json.dumps(w.folded),))
            counted = "LEFT JOIN resent_new r ON r.frame_id = c.frame_id "
        cursor.execute(
            "INSERT INTO seen_frames (frame_id, frame_text, crc8, first_seen, last_seen, seen_count, last_source) "
            "SELECT c.frame_id, c.frame_text, substr(c.frame_text, -2), c.first_seen, c.updated_at, "
            f"{'coalesce(r.seen_count, 1)' if counted else '1'}, c.source "
            f"FROM cases c {counted}WHERE c.id > ? ORDER BY c.frame_id", (base,)
        )
        if counted:
            cursor.execute("DELETE FROM resent_new")
        if len(seen_rows) == len(case_rows):
            return []
        applied = set(map(_frame_id_of_case, case_rows))
        return list(compress(seen_rows, map(not_, map(applied.__contains__, map(_frame_id, seen_rows)))))

    def _bump_sqlite(self, now: float, source: str, w: Writes) -> None:
        """SQLite: the witnesses' re-send counts in one ``UPDATE ... FROM json_each``: the ids and
        counts go in as one JSON object (sorted, so the key's index is walked in one sweep), not
        a bound statement per id. The held conflicts' few repeats as the reference writes them."""
        if w.seen_bumps:
            self.db.cursor().execute(
                "UPDATE seen_frames SET seen_count = seen_count + b.value, last_seen = ?, last_source = ? "
                "FROM json_each(?) AS b WHERE seen_frames.frame_id = b.key",
                (now, source, json.dumps(w.seen_bumps, sort_keys=True)),
            )
        self._bump_held(now, w)

    def _bump_resends(self, now, source, w) -> None:
        """Re-sends of a kept frame or a held conflict: their counts and last sighting."""
        self._execute_many(
            "UPDATE seen_frames SET seen_count = seen_count + ?, last_seen = ?, last_source = ? "
            "WHERE frame_id = ?",
            [(n, now, source, fid) for fid, n in w.seen_bumps.items()],
        )
        self._bump_held(now, w)

    def _bump_held(self, now, w) -> None:
        """Repeats of a conflict already held in quarantine: its count and last sighting."""
        self._execute_many(
            "UPDATE quarantine SET seen_count = seen_count + ?, last_seen = ? "
            "WHERE frame_id = ? AND frame_text = ?",
            [(n, now, fid, text) for (fid, text), n in w.quarantine_bumps.items()],
        )

    def _prune_activity(self) -> None:
        self.db.execute_sql(
            "DELETE FROM activity WHERE id <= (SELECT MAX(id) FROM activity) - ?".replace("?", self.db.param),
            (ACTIVITY_KEEP,),
        )

    def _prune_activity_shared(self) -> None:
        """PostgreSQL: the live feed is cut after the commit, by one receiver at a time (the others
        skip it: rows every writer deletes would make them wait on each other)."""
        try:
            with self.db.atomic():
                if self.db.execute_sql("SELECT pg_try_advisory_xact_lock(%s, 2)", (PG_WRITE_LOCK,)).fetchone()[0]:
                    self._prune_activity()
        except Exception as exc:  # the batch is committed: a feed cut that failed is tried again next batch
            if not is_database_error(exc):
                raise
            log.warning("the live feed was not cut this time: %s", one_line(exc))
