"""Tables for operators and the signed audit log (schema version 3).

Times are ``DoubleField``: the entry time is part of the signed text, and a
4-byte REAL (what ``FloatField`` becomes on PostgreSQL) would round it and
break every signature.

Kept apart from ``core.store.models`` so the dedup core does not depend on them;
``audit_models(db)`` binds them to a receiver's database once and reuses them.
"""

from __future__ import annotations

from types import SimpleNamespace

from peewee import AutoField, Database, DoubleField, IntegerField, Model, TextField

from core.store.database import bound_models

def bind_audit_models(db: Database) -> SimpleNamespace:
    class Base(Model):
        class Meta:
            database = db
            legacy_table_names = False

    class Operator(Base):
        """A name and its Ed25519 public key; names are never reused, keys never removed."""

        id = AutoField()
        name = TextField(unique=True)
        public_key = TextField()  # raw 32 bytes, hex
        fingerprint = TextField(unique=True)  # sha256 of the raw public key, hex
        added_at = DoubleField()
        retired_at = DoubleField(null=True)

        class Meta:
            table_name = "operators"

    class AuditEntry(Base):
        """One signed action. ``id`` is the physical order, ``seq`` the signed number.

        Every column but ``id``, ``signature`` and ``hash`` is part of the signed
        text, so an edit to any of them breaks the signature.
        """

        id = AutoField()
        seq = IntegerField(unique=True)
        action = TextField()
        target = TextField()
        reason = TextField()
        operator = TextField()
        key = TextField()  # fingerprint of the signing key
        at = DoubleField()
        prev_hash = TextField()
        payload = TextField()  # canonical JSON
        signature = TextField()  # hex
        hash = TextField()  # sha256 over the signed text and the signature, hex

        class Meta:
            table_name = "audit_log"

    class AuditHead(Base):
        """The chain's last hash and length, written with every entry: a cut-off tail shows."""

        id = IntegerField(primary_key=True)
        count = IntegerField()
        head_hash = TextField()
        updated_at = DoubleField()

        class Meta:
            table_name = "audit_head"

    return SimpleNamespace(Operator=Operator, AuditEntry=AuditEntry, AuditHead=AuditHead)


def audit_models(db: Database) -> SimpleNamespace:
    """The audit models bound to ``db``, bound once per database object."""
    return bound_models(db, bind_audit_models)


APPEND_ONLY = "the audit log is append-only"


def create_audit_tables(db: Database) -> None:
    a = audit_models(db)
    db.create_tables([a.Operator, a.AuditEntry, a.AuditHead])
    for sql in db.append_only_sql("audit_log", APPEND_ONLY):
        db.execute_sql(sql)



TRUNCATE_GUARDED = ("audit_log", "audit_head", "operators")


def create_truncate_guards(db: Database) -> None:
    """PostgreSQL's TRUNCATE passes row triggers; the backend adds statement triggers where it has it."""
    for sql in db.no_truncate_sql(TRUNCATE_GUARDED, "the audit tables are append-only"):
        db.execute_sql(sql)
