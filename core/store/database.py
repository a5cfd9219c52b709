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
import sqlite3
from typing import Iterator

from peewee import Database, PeeweeException

from .backend import is_postgres_url


class StoreError(RuntimeError):
    """The store cannot be opened or used; the message is for the operator."""


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
            db.take_write_lock()
            try:
                yield
            except BaseException as exc:
                failure = exc
                raise
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


def describe_target(target: str) -> str:
    """The store's address for messages, without a password."""
    if is_postgres_url(target):
        from urllib.parse import urlsplit

        parts = urlsplit(target)
        host = parts.hostname or "local socket"
        return f"postgresql://{parts.username + '@' if parts.username else ''}{host}{parts.path}"
    return target
