"""The schema: the store's numbered migrations, and ``connect`` (open, then bring the schema up to date).

Signing declares its own steps (``core.signing.migrations``); ``core.receiver`` hands ``connect``
every package's steps in number order, so the store imports no package above it.
"""

from __future__ import annotations

import time
from typing import Callable

from peewee import Database

from core.i18n import N_
from core.rules.text import one_line

from .backend import is_postgres_url, open_database
from .database import StoreError, claim_sqlite, describe_target, write_transaction
from .gateway_tables import migrate_message_contents as _v24_gateway_message_contents
from .gateway_tables import migrate_v21 as _v21_gateways
from .home_identity import migrate_v25 as _v25_home_id
from .inbox_progress import migrate_v2 as _v2_inbox_tables
from .models import RANKED_SQL, bind_models
from .outbox import migrate_v15 as _v15_alert_outbox

Migration = Callable[[Database, object], None]


def _v1_core_tables(db: Database, m) -> None:
    db.create_tables(
        [
            m.SeenFrame,
            m.Case,
            m.CaseHistory,
            m.Quarantine,
            m.Settlement,
            m.Reject,
            m.Activity,
            m.Counter,
            m.ArrivalMinute,
            m.Total,
            m.Policy,
            m.Eviction,
        ]
    )


def _v14_case_lifecycle(db: Database, m) -> None:
    """Case statuses (every existing case becomes ``open``) and the signed marks' table.

    Numbered 14 (the issue that brought it) so branches adding steps in parallel
    do not collide; steps apply by membership, so the gap is harmless.
    A store created since ``Case.status`` existed already has the column (step 1
    builds tables from the models), so it is added only where missing.
    """
    if "status" not in {c.name for c in db.get_columns("cases")}:
        db.execute_sql("ALTER TABLE cases ADD COLUMN status TEXT NOT NULL DEFAULT 'open'")
    db.create_tables([m.CaseMark])
    # The ranking walks only the cases aid may still go to, however many are done.
    db.execute_sql(
        "CREATE INDEX IF NOT EXISTS cases_ranked ON cases (pri, headcount, first_seen) "
        f"WHERE {RANKED_SQL}"
    )


# The counted tables' columns before and after v22: their keys, then the count.
_SLOTTED = {
    "counters": (("source", "TEXT"), ("outcome", "TEXT"), "count"),
    "arrival_minutes": (("minute", "INTEGER"), ("source", "TEXT"), "count"),
    "totals": (("name", "TEXT"), "value"),
}


def _v22_writer_slots(db: Database, m) -> None:
    """Counters, arrivals per minute and totals get a writer ``slot`` in their key.

    Receivers sharing a PostgreSQL store each add to their own rows (summed when
    read), so no counter row serialises them. A store created since the models
    had the column already has it (step 1 builds tables from the models). The
    existing counts move to slot 0.
    """
    for table, spec in _SLOTTED.items():
        if "slot" in {c.name for c in db.get_columns(table)}:
            continue
        *keys, value = spec
        names = [name for name, _type in keys]
        if db.dialect == "postgresql":
            db.execute_sql(f"ALTER TABLE {table} ADD COLUMN slot INTEGER NOT NULL DEFAULT 0")
            db.execute_sql(f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey")
            db.execute_sql(f"ALTER TABLE {table} ADD PRIMARY KEY ({', '.join(names)}, slot)")
            continue
        # SQLite cannot change a primary key: the table is rebuilt and its rows copied.
        columns = ", ".join(f'"{name}" {kind} NOT NULL' for name, kind in keys)
        db.execute_sql(
            f'CREATE TABLE "{table}_v22" ({columns}, "slot" INTEGER NOT NULL DEFAULT 0, "{value}" INTEGER NOT NULL, '
            f'PRIMARY KEY ({", ".join(names)}, "slot"))'
        )
        listed = ", ".join(f'"{name}"' for name in (*names, value))
        db.execute_sql(f'INSERT INTO "{table}_v22" ({listed}, "slot") SELECT {listed}, 0 FROM "{table}"')
        db.execute_sql(f'DROP TABLE "{table}"')
        db.execute_sql(f'ALTER TABLE "{table}_v22" RENAME TO "{table}"')


def _v23_one_rank_index(db: Database, m) -> None:
    """The cases' full ``(pri, headcount, first_seen)`` index goes; ``cases_ranked`` (the same
    columns, open and dispatched cases only) stays.

    Every new case landed on a random leaf of both (their order is not arrival
    order), and each commit wrote those pages again: with 1,000,000 stored, the
    ingest measured 1.16x faster without the full one. It served only
    ``ranking --all`` and ``cases --sort pri``, which now sort like the other
    columns do (0.3 s on a million cases). Numbered after the writer slots,
    the step before it on the same work.
    """
    db.execute_sql("DROP INDEX IF EXISTS cases_pri_headcount_first_seen")


def _v26_witnesses_without_rowid(db: Database, m) -> None:
    """SQLite: ``seen_frames`` rebuilt as a WITHOUT ROWID table, its rows kept in the b-tree of
    their frame id (a rowid table kept them in one b-tree and the key in another: a first arrival
    wrote both). Rows, columns and the ``first_seen`` index (eviction walks it) are as they were.
    PostgreSQL keeps its table: a heap and its key's index either way. A store created since the
    model said so already has it (step 1 builds tables from the models)."""
    if db.dialect != "sqlite":
        return
    made = db.execute_sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'seen_frames'").fetchone()
    if made is None or "WITHOUT ROWID" in made[0].upper():
        return
    db.execute_sql("ALTER TABLE seen_frames RENAME TO seen_frames_v25")
    db.execute_sql("DROP INDEX IF EXISTS seen_frames_first_seen")
    db.create_tables([m.SeenFrame])
    listed = ", ".join(f'"{f.column_name}"' for f in m.SeenFrame._meta.sorted_fields)
    db.execute_sql(f"INSERT INTO seen_frames ({listed}) SELECT {listed} FROM seen_frames_v25 ORDER BY frame_id")
    db.execute_sql("DROP TABLE seen_frames_v25")


# Append only: a released store is upgraded by running the steps it lacks, in order. Signing's
# steps (3 and 4) are its own, in ``core.signing.migrations``.
MIGRATIONS: list[tuple[int, str, Migration]] = [
    (1, "core tables: dedup witnesses, ledger, quarantine, rejects, accounting, retention", _v1_core_tables),
    (2, "inbox: claimed files with per-file progress, files per delivery path", _v2_inbox_tables),
    (14, "case lifecycle: a status per case and its signed marks", _v14_case_lifecycle),
    (15, "alert outbox: events and one delivery row per event and target", _v15_alert_outbox),
    (21, "gateways: signed accounts (token hashes), per-gateway counts, gateway message ids", _v21_gateways),
    (22, "writer slots: counters and totals keep a row per writer, summed when read", _v22_writer_slots),
    (23, "cases: one rank index (open and dispatched), not two", _v23_one_rank_index),
    (24, "gateway message ids keep the content they first carried (a reused id is not a retry)",
     _v24_gateway_message_contents),
    (25, "the home's id, made once and kept in its store (a backup names the home it is of)", _v25_home_id),
    (26, "dedup witnesses in one b-tree each (SQLite: seen_frames WITHOUT ROWID)", _v26_witnesses_without_rowid),
]


def _numbers(steps: list[tuple[int, str, Migration]]) -> list[int]:
    """The steps' numbers, refused unless in order with each once (a program's error, not the store's)."""
    numbers = [version for version, _what, _step in steps]
    if not numbers or numbers != sorted(set(numbers)):
        raise ValueError(f"schema steps must be in number order, each number once: {numbers}")
    return numbers


def migrate(db: Database, m, steps: list[tuple[int, str, Migration]]) -> int:
    """Bring the schema up to date with ``steps`` (every package's, in number order); return the
    newest version now in force.

    Steps are applied by membership, not by "newer than the highest": numbers
    may have gaps while branches are merged, and a step that was missing when a
    store was created is still applied later, in list order.

    An up-to-date SQLite store is only read here, without the write lock: a
    read-only store, or one another process holds locked, can still be read.
    """
    numbers = _numbers(steps)
    current = db.schema_versions_unlocked()
    wanted = set(numbers)
    if current is not None and wanted <= current and max(current) <= numbers[-1]:
        return max(current)
    with write_transaction(db):
        db.create_tables([m.SchemaVersion])
        applied = {row.version for row in m.SchemaVersion.select(m.SchemaVersion.version)}
        have = max(applied, default=0)
        latest = numbers[-1]
        if have > latest:
            raise StoreError(N_("the store is at schema version %(have)s, newer than this program knows "
                                "(%(latest)s); upgrade the program"), have=have, latest=latest)
        for version, _what, step in steps:
            if version not in applied:
                step(db, m)
                m.SchemaVersion.create(version=version, applied_at=time.time())
                applied.add(version)
    return max(applied)


def connect(store_target: str, create: bool = True, *, steps: list[tuple[int, str, Migration]]):
    """Open, configure and migrate with ``steps``; return ``(db, models)``. A SQLite file that is not
    one of our stores is refused untouched; without ``create`` (a reading command) a missing one is too."""
    _numbers(steps)
    if not is_postgres_url(store_target) and store_target != ":memory:":
        claim_sqlite(store_target, create)
    db = open_database(store_target)
    m = bind_models(db)
    try:
        db.connect(reuse_if_open=True)
        migrate(db, m, steps)
    except StoreError:
        db.close()
        raise
    except Exception as exc:  # peewee wraps driver errors in its own types
        db.close()
        raise StoreError(N_("cannot open the store at %(target)s: %(reason)s"), target=describe_target(store_target),
                         reason=one_line(exc)) from exc
    return db, m
