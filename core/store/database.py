"""Opening the store, and the one ``write_transaction`` both backends use.

Durability (R8) lives here: every write of the ledger happens inside
``write_transaction``, which holds the store's single write lock from its first
statement (``BEGIN IMMEDIATE`` on SQLite, an advisory lock on PostgreSQL; see
``backend``), so a batch's decisions are made on a state no other writer can
change before it commits. One context manager serves both backends; that is
deliberate and worth keeping.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import stat
import weakref
from typing import Callable, Iterator, TypeVar

from peewee import Database, PeeweeException

from core.i18n import N_, MarkedError

from .backend import is_postgres_url

M = TypeVar("M")
_BOUND: "weakref.WeakKeyDictionary[Database, dict]" = weakref.WeakKeyDictionary()


def bound_models(db: Database, bind: Callable[[Database], M]) -> M:
    """The models ``bind`` makes for ``db``, made once per database object and let go with it:
    a table set that lives beside ``models.py`` (the outbox, the gateways', the audit log's)."""
    per_db = _BOUND.get(db)
    if per_db is None:
        per_db = _BOUND[db] = {}
    made = per_db.get(bind)
    if made is None:
        made = per_db[bind] = bind(db)
    return made


class StoreError(MarkedError, RuntimeError):
    """The store cannot be opened or used; the message is for the operator."""


@contextlib.contextmanager
def write_transaction(db: Database, shared: bool = False) -> Iterator[None]:
    """A transaction that holds the store's single write lock from its first statement.

    ``shared`` (the ingest only): on PostgreSQL the lock is held together with
    other receivers' ingests, never with a signed action or an eviction; the
    ingest then settles races between receivers through the unique constraints
    (``ledger``). On SQLite every writer holds the one lock alone.

    When the body or the commit fails and the rollback then fails too, the
    first error is the one raised: SQLite rolls back by itself on a full disk
    or an I/O error, and the rollback's "no transaction is active" would hide
    what is really wrong.
    """
    failure: BaseException | None = None
    try:
        with db.atomic():
            db.take_write_lock(shared)
            try:
                yield
            except BaseException as exc:
                failure = exc
                raise
        if not db.in_transaction():  # the outermost one: committed
            db.committed()
    except Exception as exc:
        if failure is not None and exc is not failure:
            raise failure from None
        if failure is None and is_database_error(exc):
            cause = _first_database_error(exc)
            if cause is not exc:
                raise cause from None  # the commit failed, then its rollback
        raise


def _first_database_error(exc: BaseException) -> BaseException:
    """Along the chain of database errors that ``exc`` ends (each driver error comes wrapped by
    peewee, with the same message), the first one that says something else: the root cause."""
    seen = exc.__context__
    for _ in range(8):
        if seen is None or not is_database_error(seen):
            break
        if str(seen) != str(exc):
            return seen
        seen = seen.__context__
    return exc


def is_database_error(exc: BaseException) -> bool:
    """An error from the database (SQLite or PostgreSQL, raw or wrapped by peewee)."""
    return isinstance(exc, (PeeweeException, sqlite3.Error)) or type(exc).__module__.split(".")[0] == "psycopg"


def describe_target(store_target: str) -> str:
    """The store's address for messages, without a password."""
    if is_postgres_url(store_target):
        from urllib.parse import urlsplit

        parts = urlsplit(store_target)
        host = parts.hostname or "local socket"
        return f"postgresql://{parts.username + '@' if parts.username else ''}{host}{parts.path}"
    return store_target


SQLITE_MAGIC = b"SQLite format 3\x00"
_SCHEMA_SCAN = 4 << 20  # the schema of a store (sqlite_master) sits in the file's first pages
_CREATE_TABLE = re.compile(rb'CREATE TABLE (?:IF NOT EXISTS )?["`\[]?([A-Za-z_][A-Za-z0-9_]*)', re.I)
OUR_TABLE = "schema_version"  # every store this program made has it, from its first commit


# Paths this process has claimed (then opened with SQLite). Each is read here once per process:
# closing any descriptor of a file drops every POSIX lock this process holds on it, SQLite's included, so a
# second look while a connection of ours is open would break that connection's locking.
_OURS: set[str] = set()


def claim_sqlite(store_target: str, create: bool) -> None:
    """Refuse to open a file at ``store_target`` that is not one of our stores (see ``_claim``); a path
    this process already claimed is not looked at again."""
    key = os.path.realpath(store_target)
    if key in _OURS:
        return
    _claim(store_target, create)
    _OURS.add(key)


def _claim(store_target: str, create: bool) -> None:
    """Refuse to open a file at ``store_target`` that is not one of our stores, before SQLite touches it.

    SQLite takes any path: an empty file becomes a new database, another
    program's database gets our tables and triggers added. So a file is opened
    only when it is our store (it has ``schema_version``) or, for a command
    that may create one (``create``), an empty file or a SQLite file with no
    table at all: what a store looks like while another process creates it
    (two receivers starting together on a new store), or after a crash then.
    Nothing is written here; a missing file is created later, and only when
    ``create``.
    """
    try:
        st = os.stat(store_target)
    except FileNotFoundError:
        if create:
            return
        raise StoreError(N_("no store at %(target)s; nothing was created (watch or ingest creates one)"),
                         target=store_target) from None
    except OSError as exc:
        raise StoreError(N_("cannot open the store at %(target)s: %(reason)s"), target=store_target,
                         reason=exc.strerror) from None
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(N_("%(target)s is not a file, so not a store; it was left as it is"), target=store_target)
    if st.st_size == 0 and create:
        return  # what a store looks like while another process creates it (SQLite writes at its first commit)
    if st.st_size == 0:
        raise StoreError(N_("%(target)s is an empty file, not a store; it was left as it is "
                            "(remove it and watch or ingest creates a store there)"), target=store_target)
    try:
        with open(store_target, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise StoreError(N_("cannot read the store at %(target)s: %(reason)s"), target=store_target,
                         reason=exc.strerror) from None
    if head != SQLITE_MAGIC:
        raise StoreError(N_("%(target)s is not a SQLite database, so not a store of this program; "
                            "it was left unchanged"), target=store_target)
    tables = _schema_tables(store_target)
    if OUR_TABLE in tables:
        return
    if tables:
        shown = ", ".join(sorted(tables)[:5])
        if len(tables) > 5:
            raise StoreError(N_("%(target)s is another program's database (tables: %(tables)s and %(more)s more), "
                                "not a store of this program; it was left unchanged"),
                             target=store_target, tables=shown, more=len(tables) - 5)
        raise StoreError(N_("%(target)s is another program's database (tables: %(tables)s), not a store of this "
                            "program; it was left unchanged"), target=store_target, tables=shown)
    if not create:
        raise StoreError(N_("%(target)s holds no store yet; it was left as it is (watch or ingest creates one)"),
                         target=store_target)


def _schema_tables(store_target: str) -> set[str]:
    """The table names in a SQLite file's schema, read as bytes, without opening it with SQLite.

    SQLite is not asked: its connection would set nothing, but a foreign file with a hot
    journal would be rolled back by it. The schema's
    ``CREATE TABLE`` texts sit in the first pages of the file, or of its ``-wal`` right after
    a store was created.
    """
    found: set[str] = set()
    for name in (store_target, store_target + "-wal"):
        try:
            with open(name, "rb") as fh:
                head = fh.read(_SCHEMA_SCAN)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreError(N_("cannot read the store at %(target)s: %(reason)s"), target=store_target,
                             reason=exc.strerror) from None
        found.update(m.group(1).decode("ascii").lower() for m in _CREATE_TABLE.finditer(head))
    return found
