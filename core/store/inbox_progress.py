"""The inbox's tables: claimed files with their per-file progress, and files per path.

Kept apart from ``core.models`` so the inbox can grow without touching the
ledger's schema; ``core.store`` creates them in migration 2.
"""

from __future__ import annotations

from types import SimpleNamespace

from peewee import BigIntegerField, Database, DoubleField, IntegerField, Model, TextField


def bind_inbox_models(db: Database) -> SimpleNamespace:
    class Base(Model):
        class Meta:
            database = db
            legacy_table_names = False

    class InboxFile(Base):
        """One claimed inbox file. ``line``/``offset`` commit with the frames they cover (R8)."""

        claim = TextField(primary_key=True)  # the file's name in the claimed folder
        name = TextField()  # its name in the inbox, escaped
        source = TextField()  # the delivery path that won the claim
        format = TextField(null=True)
        state = TextField(index=True)  # claimed, done, rejected
        line = IntegerField(default=0)  # lines read and committed
        # "offset" is a reserved word in PostgreSQL, so the column has another name.
        offset = BigIntegerField(default=0, column_name="byte_offset")  # bytes read and committed
        frames = IntegerField(default=0)
        claimed_at = DoubleField()
        updated_at = DoubleField()
        finished_at = DoubleField(null=True)
        archived_as = TextField(null=True)  # relative to the home
        reason = TextField(null=True)

        class Meta:
            table_name = "inbox_files"

    class InboxPathFiles(Base):
        """Files per delivery path, counted when the file's first progress commits."""

        source = TextField(primary_key=True)
        files = IntegerField(default=0)

        class Meta:
            table_name = "inbox_path_files"

    return SimpleNamespace(InboxFile=InboxFile, InboxPathFiles=InboxPathFiles)


def migrate_v2(db: Database, _models) -> None:
    m = bind_inbox_models(db)
    db.create_tables([m.InboxFile, m.InboxPathFiles])
