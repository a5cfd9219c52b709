"""Opening the store: the database, its pragmas, and its schema migrations.

Durability (R8) lives here: WAL with ``synchronous=FULL`` means a committed
transaction is on disk before ``COMMIT`` returns, so a power cut can lose only
work that was never reported as done.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Callable, Iterator

from peewee import Database, PostgresqlDatabase, SqliteDatabase

from .audit_models import create_audit_tables, create_truncate_guards
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


# Every writing transaction on PostgreSQL first takes this transaction-scoped
# advisory lock: the same effect as SQLite's BEGIN IMMEDIATE. Decisions are
# made on a snapshot no other writer can change until commit, and the unique
# constraints stay underneath as the backstop.
PG_WRITE_LOCK = 0x55_53_53_44  # "USSD"


def is_postgres_url(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


def is_postgres(db: Database) -> bool:
    return isinstance(db, PostgresqlDatabase)


@contextlib.contextmanager
def write_transaction(db: Database) -> Iterator[None]:
    """A transaction that holds the store's single write lock from its first statement.

    When the body or the commit fails and the rollback then fails too, the
    first error is the one raised: SQLite rolls back by itself on a full disk
    or an I/O error, and the rollback's "no transaction is active" would hide
    what is really wrong.
    """
    failure: BaseException | None = None
    try:
        with db.atomic():
            if is_postgres(db):
                db.execute_sql("SELECT pg_advisory_xact_lock(%s)", (PG_WRITE_LOCK,))
            try:
                yield
            except BaseException as exc:
                failure = exc
                raise
    except Exception as exc:
        if failure is not None and exc is not failure:
            raise failure from None
        if failure is None and _is_database_error(exc):
            cause = _first_database_error(exc)
            if cause is not exc:
                raise cause from None  # the commit failed, then its rollback
        raise


def _first_database_error(exc: BaseException) -> BaseException:
    """Along the chain of database errors that ``exc`` ends (each driver error comes wrapped by
    peewee, with the same message), the first one that says something else: the root cause."""
    seen = exc.__context__
    for _ in range(8):
        if seen is None or not _is_database_error(seen):
            break
        if str(seen) != str(exc):
            return seen
        seen = seen.__context__
    return exc


def _is_database_error(exc: BaseException) -> bool:
    import sqlite3

    from peewee import PeeweeException

    return isinstance(exc, (PeeweeException, sqlite3.Error)) or type(exc).__module__.split(".")[0] == "psycopg"


def describe_target(target: str) -> str:
    """The store's address for messages, without a password."""
    if is_postgres_url(target):
        from urllib.parse import urlsplit

        parts = urlsplit(target)
        host = parts.hostname or "local socket"
        return f"postgresql://{parts.username + '@' if parts.username else ''}{host}{parts.path}"
    return target


def open_database(target: str) -> Database:
    """A peewee database for a PostgreSQL URL, a SQLite path or ``:memory:``."""
    if is_postgres_url(target):
        return PostgresqlDatabase(target, prefer_psycopg3=True)
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


def _v3_operators_and_audit(db: Database, m) -> None:
    create_audit_tables(db)


def _v4_audit_truncate_guards(db: Database, m) -> None:
    create_truncate_guards(db)


# Append only: a released store is upgraded by running the steps it lacks, in order.
MIGRATIONS: list[tuple[int, str, Migration]] = [
    (1, "core tables: dedup witnesses, ledger, quarantine, rejects, accounting, retention", _v1_core_tables),
    (2, "inbox: claimed files with per-file progress, files per delivery path", _v2_inbox_tables),
    (3, "operators, the signed audit log and its head", _v3_operators_and_audit),
    (4, "PostgreSQL: the audit tables refuse TRUNCATE", _v4_audit_truncate_guards),
]


def migrate(db: Database, m) -> int:
    """Bring the schema up to date; return the newest version now in force.

    Steps are applied by membership, not by "newer than the highest": numbers
    may have gaps while branches are merged, and a step that was missing when a
    store was created is still applied later, in list order.

    An up-to-date SQLite store is only read here, without the write lock: a
    read-only store, or one another process holds locked, can still be read.
    """
    if not is_postgres(db):
        current = _applied_versions(db)
        wanted = {version for version, _what, _step in MIGRATIONS}
        if current is not None and wanted <= current and max(current) <= MIGRATIONS[-1][0]:
            return max(current)
    with write_transaction(db):
        db.create_tables([m.SchemaVersion])
        applied = {row.version for row in m.SchemaVersion.select(m.SchemaVersion.version)}
        have = max(applied, default=0)
        latest = MIGRATIONS[-1][0]
        if have > latest:
            raise StoreError(
                f"the store is at schema version {have}, newer than this program knows ({latest}); "
                "upgrade the program"
            )
        for version, _what, step in MIGRATIONS:
            if version not in applied:
                step(db, m)
                m.SchemaVersion.create(version=version, applied_at=time.time())
                applied.add(version)
    return max(applied)


def _applied_versions(db: Database) -> set[int] | None:
    """Schema versions recorded in a SQLite store, or ``None`` before its first migration."""
    found = db.execute_sql(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if found is None:
        return None
    return {row[0] for row in db.execute_sql("SELECT version FROM schema_version").fetchall()}


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
    except Exception as exc:  # peewee wraps driver errors in its own types
        db.close()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise StoreError(f"cannot open the store at {describe_target(target)}: {first}") from exc
    return db, m
