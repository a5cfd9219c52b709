"""Opening the store: the database, its pragmas, and its schema migrations.

Durability (R8) lives here: WAL with ``synchronous=FULL`` means a committed
transaction is on disk before ``COMMIT`` returns, so a power cut can lose only
work that was never reported as done.
"""

from __future__ import annotations

import os
import time
from typing import Callable

from peewee import Database, SqliteDatabase

from .inbox_models import migrate_v2 as _v2_inbox_tables
from .models import bind_models

BUSY_TIMEOUT_MS = 5000

SQLITE_PRAGMAS = {
    "journal_mode": "wal",
    "synchronous": "full",
    "foreign_keys": 1,
    "busy_timeout": BUSY_TIMEOUT_MS,
    "cache_size": -32_000,  # 32 MB page cache
    "temp_store": "memory",
}


class StoreError(RuntimeError):
    """The store cannot be opened or used; the message is for the operator."""


def open_database(target: str) -> Database:
    """A peewee database for a SQLite path or ``:memory:``."""
    if target != ":memory:":
        parent = os.path.dirname(os.path.abspath(target))
        os.makedirs(parent, exist_ok=True)
    pragmas = dict(SQLITE_PRAGMAS)
    if target == ":memory:":
        pragmas.pop("journal_mode")
    # IMMEDIATE: a writing transaction takes the write lock before it reads, so
    # two processes cannot both decide "new" for the same frame.
    return SqliteDatabase(
        target,
        pragmas=pragmas,
        lock_type="IMMEDIATE",
        timeout=BUSY_TIMEOUT_MS / 1000,
        check_same_thread=False,
    )


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


# Append only: a released store is upgraded by running the steps it lacks, in order.
MIGRATIONS: list[tuple[int, str, Migration]] = [
    (1, "core tables: dedup witnesses, ledger, quarantine, rejects, accounting, retention", _v1_core_tables),
    (2, "inbox: claimed files with per-file progress, files per delivery path", _v2_inbox_tables),
]


def migrate(db: Database, m) -> int:
    """Bring the schema up to date; return the version now in force."""
    with db.atomic():
        db.create_tables([m.SchemaVersion])
        current = m.SchemaVersion.select().order_by(m.SchemaVersion.version.desc()).first()
        have = current.version if current else 0
        latest = MIGRATIONS[-1][0]
        if have > latest:
            raise StoreError(
                f"the store is at schema version {have}, newer than this program knows ({latest}); "
                "upgrade the program"
            )
        for version, _what, step in MIGRATIONS:
            if version > have:
                step(db, m)
                m.SchemaVersion.create(version=version, applied_at=time.time())
                have = version
    return have


def connect(target: str):
    """Open, configure and migrate; return ``(db, models)``."""
    db = open_database(target)
    m = bind_models(db)
    try:
        db.connect(reuse_if_open=True)
        migrate(db, m)
    except StoreError:
        db.close()
        raise
    except Exception as exc:  # peewee wraps sqlite3 errors in its own types
        db.close()
        raise StoreError(f"cannot open the store at {target}: {exc}") from exc
    return db, m
