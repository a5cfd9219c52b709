"""Signing's own schema steps (the operators and the hash-chained log's tables), numbered among the
store's: ``core.receiver`` hands the store every package's steps, so the store never imports signing."""

from __future__ import annotations

from peewee import Database

from .audit_models import create_audit_tables, create_truncate_guards


def _v3_operators_and_audit(db: Database, m) -> None:
    create_audit_tables(db)


def _v4_audit_truncate_guards(db: Database, m) -> None:
    create_truncate_guards(db)


MIGRATIONS = [
    (3, "operators, the signed audit log and its head", _v3_operators_and_audit),
    (4, "PostgreSQL: the audit tables refuse TRUNCATE", _v4_audit_truncate_guards),
]
