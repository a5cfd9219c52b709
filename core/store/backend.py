"""Every difference between SQLite and PostgreSQL, as one small database class per dialect.

The rest of the store asks the database object (``db.take_write_lock()``,
``db.insert_rows(...)``, ``db.data_version()``...) instead of checking which
engine it is, the way peewee itself keeps dialects in ``Database`` subclasses.
"""

from __future__ import annotations

import os
import sqlite3
import time

from peewee import PostgresqlDatabase, SqliteDatabase

from .checkpoints import Checkpoints

BUSY_TIMEOUT_MS = 5000

SQLITE_PRAGMAS = {
    "journal_mode": "wal",
    "synchronous": "full",
    "foreign_keys": 1,
    "busy_timeout": BUSY_TIMEOUT_MS,
    "cache_size": -32_000,  # 32 MB page cache
    "temp_store": "memory",
    # Checkpoints run beside the writer, not inside its commit (core/store/checkpoints.py).
    "wal_autocheckpoint": 0,
}

# Every writing transaction on PostgreSQL first takes this transaction-scoped
# advisory lock. Signed actions, eviction and migrations take it exclusively: the
# same effect as SQLite's BEGIN IMMEDIATE. The ingest takes it shared, so several
# receivers ingest at once and decide "first arrival" between themselves through
# the unique constraints (``INSERT ... ON CONFLICT DO NOTHING RETURNING``, see
# ``ledger``), while no signed action or eviction changes what they decide on.
PG_WRITE_LOCK = 0x55_53_53_44  # "USSD"
# Writer slots: each connection that writes claims one with a session-level advisory
# lock on (PG_SLOT_LOCK, n), and adds to its own counter rows (``totals.add_counts``).
PG_SLOT_LOCK = 0x55_53_53_53
WRITER_SLOTS = 64


def is_postgres_url(store_target: str) -> bool:
    return store_target.startswith(("postgresql://", "postgres://"))


class _Dialect:
    """What both dialects share; each subclass says only how it differs."""

    def committed(self) -> None:
        """A writing transaction committed (``write_transaction``); SQLite checks its log in."""

    def quoted(self, name: str) -> str:
        return f"{self.quote[0]}{name}{self.quote[1]}"

    def insert_rows(self, table: str, columns: list[str], rows: list, on_conflict: str = "") -> None:
        """Insert raw rows into ``table`` (names unquoted); the fast path of the ledger writes."""
        if rows:
            cols = ", ".join(self.quoted(c) for c in columns)
            marks = ", ".join([self.param] * len(columns))
            self.cursor().executemany(
                f"INSERT INTO {self.quoted(table)} ({cols}) VALUES ({marks}) {on_conflict}", rows
            )


class SqliteStore(_Dialect, SqliteDatabase):
    """SQLite: WAL with ``synchronous=FULL`` (a committed transaction is on disk before
    ``COMMIT`` returns, R8) and ``BEGIN IMMEDIATE`` (a writing transaction holds the write
    lock before it reads, so two processes cannot both decide "new" for one frame)."""

    dialect = "sqlite"

    @classmethod
    def open(cls, store_target: str) -> "SqliteStore":
        if store_target != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(store_target)), exist_ok=True)
        pragmas = dict(SQLITE_PRAGMAS)
        if store_target == ":memory:":
            pragmas.pop("journal_mode")
        db = cls(store_target, pragmas=pragmas, lock_type="IMMEDIATE", timeout=BUSY_TIMEOUT_MS / 1000,
                 check_same_thread=False)
        if store_target != ":memory:":
            db.checkpoints = Checkpoints(store_target)
        return db

    def _set_pragmas(self, conn) -> None:
        """The pragmas, waited for as the busy timeout waits for a lock.

        ``PRAGMA journal_mode`` is the one statement SQLite's busy handler does not wait for: a
        connection that opens a new store while another is still making it (in rollback mode,
        before its switch to WAL) gets "database is locked" at once. Two receivers starting on a
        new home, or the console's reader and its inbox, then failed to start."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                super()._set_pragmas(conn)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)

    checkpoints: Checkpoints | None = None  # None for ``:memory:``, which has no log

    def committed(self) -> None:
        """A writing transaction committed: its log pages are checked in off this thread."""
        if self.checkpoints is not None:
            self.checkpoints.poke()

    def close(self):
        """The running checkpoint first, so this connection, the last, still removes the log."""
        if self.checkpoints is not None:
            self.checkpoints.wait()
        return super().close()

    def take_write_lock(self, shared: bool = False) -> None:
        """Nothing to do: ``BEGIN IMMEDIATE`` took it (SQLite has one writer at a time)."""

    def writer_slot(self) -> int:
        """One writer at a time: every count lives in slot 0."""
        return 0

    def schema_versions_unlocked(self) -> set[int] | None:
        """The applied schema versions, read without the write lock (a read-only or locked
        store can still be opened); ``None`` before the first migration."""
        found = self.execute_sql(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
        ).fetchone()
        if found is None:
            return None
        return {row[0] for row in self.execute_sql("SELECT version FROM schema_version").fetchall()}

    def data_version(self) -> int:
        """Changes whenever another connection commits: a cheap "anything new?" probe."""
        return self.execute_sql("PRAGMA data_version").fetchone()[0]

    def no_truncate_sql(self, tables: tuple[str, ...], message: str) -> list[str]:
        """SQLite has no TRUNCATE; its DELETE is refused row by row by the append-only triggers."""
        return []

    def append_only_sql(self, table: str, message: str) -> list[str]:
        return append_only_sqlite(table, message)


def append_only_sqlite(table: str, message: str) -> list[str]:
    """Triggers that refuse every UPDATE and DELETE of ``table`` on SQLite."""
    return [
        f"CREATE TRIGGER IF NOT EXISTS {table}_no_{what.lower()} BEFORE {what} ON {table} "
        f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
        for what in ("UPDATE", "DELETE")
    ]


class PostgresStore(_Dialect, PostgresqlDatabase):
    """PostgreSQL through psycopg 3, shared by several receivers and consoles."""

    dialect = "postgresql"

    @classmethod
    def open(cls, store_target: str) -> "PostgresStore":
        return cls(store_target, prefer_psycopg3=True)

    def take_write_lock(self, shared: bool = False) -> None:
        """``shared``: the ingest's lock, held by many receivers at once (see ``PG_WRITE_LOCK``)."""
        if shared:
            self.execute_sql("SELECT pg_advisory_xact_lock_shared(%s)", (PG_WRITE_LOCK,))
        else:
            self.execute_sql("SELECT pg_advisory_xact_lock(%s)", (PG_WRITE_LOCK,))

    _slot: tuple | None = None

    def writer_slot(self) -> int:
        """This connection's counter slot: the first free one, held by a session advisory lock
        for the connection's life. Sharing a slot (all taken, or a reconnect) costs only waits:
        each add is one atomic upsert, so the sums stay exact either way."""
        conn = self.connection()
        if self._slot is None or self._slot[0] is not conn:
            cursor = self.cursor()
            for n in range(WRITER_SLOTS):
                cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", (PG_SLOT_LOCK, n))
                if cursor.fetchone()[0]:
                    break
            else:
                n = os.getpid() % WRITER_SLOTS
            self._slot = (conn, n)
        return self._slot[1]

    def schema_versions_unlocked(self) -> None:
        """Always ``None``: the migration check runs under the write lock, so two receivers
        starting together cannot both create the tables."""
        return None

    def insert_rows(self, table: str, columns: list[str], rows: list, on_conflict: str = "") -> None:
        """COPY for plain inserts: psycopg's executemany costs a round of Python work per row,
        COPY streams the rows in C. Upserts (a handful of counter rows) keep executemany."""
        if on_conflict or not rows:
            return super().insert_rows(table, columns, rows, on_conflict)
        cols = ", ".join(self.quoted(c) for c in columns)
        with self.cursor().copy(f"COPY {self.quoted(table)} ({cols}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def claim_rows(self, table: str, columns: list[str], types: list[str], rows: list) -> int:
        """Insert ``rows`` in their order, skipping any whose unique key another writer holds;
        how many went in. One statement: ``INSERT ... SELECT unnest(arrays)`` (a column per array)
        with ``ON CONFLICT DO NOTHING RETURNING``, which waits for a writer holding the key
        to finish and then skips it."""
        cols = ", ".join(self.quoted(c) for c in columns)
        arrays = ", ".join(f"%s::{kind}[]" for kind in types)
        cursor = self.cursor()
        cursor.execute(
            f"INSERT INTO {self.quoted(table)} ({cols}) SELECT * FROM unnest({arrays}) "
            "ON CONFLICT DO NOTHING RETURNING 1",
            [list(column) for column in zip(*rows)],
        )
        return len(cursor.fetchall())

    def data_version(self) -> int:
        """The snapshot's xmax moves on with every commit on the server (a superset of this
        store's commits: an extra refresh at worst, never a missed one)."""
        return int(self.execute_sql("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()[0])

    def no_truncate_sql(self, tables: tuple[str, ...], message: str) -> list[str]:
        """Row triggers do not fire on TRUNCATE; a statement trigger does."""
        return [
            "CREATE OR REPLACE FUNCTION audit_no_truncate() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN RAISE EXCEPTION USING MESSAGE = '{message}: ' || TG_TABLE_NAME || ' cannot be truncated'; END $$",
            *(f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
              "FOR EACH STATEMENT EXECUTE FUNCTION audit_no_truncate()" for table in tables),
        ]

    def append_only_sql(self, table: str, message: str) -> list[str]:
        return [
            f"CREATE OR REPLACE FUNCTION {table}_append_only() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN RAISE EXCEPTION '{message}'; END $$",
            *(f"CREATE TRIGGER {table}_no_{what.lower()} BEFORE {what} ON {table} "
              f"FOR EACH ROW EXECUTE FUNCTION {table}_append_only()" for what in ("UPDATE", "DELETE")),
        ]


def open_database(store_target: str) -> SqliteStore | PostgresStore:
    """A store database for a PostgreSQL URL, a SQLite path or ``:memory:``."""
    return (PostgresStore if is_postgres_url(store_target) else SqliteStore).open(store_target)
