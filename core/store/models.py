"""The store's tables, as peewee models bound to one database.

``bind_models(db)`` returns fresh model classes bound to ``db``, so two
receivers on two stores can live in one process (tests, the benchmark, a
console beside a headless watcher) without rebinding shared globals.
"""

from __future__ import annotations

from types import SimpleNamespace

from peewee import (
    AutoField,
    BigIntegerField,
    BooleanField,
    CompositeKey,
    Database,
    DoubleField,
    ForeignKeyField,
    IntegerField,
    Model,
    SQL,
    TextField,
)

from core.rules.lifecycle import RANKED

from .inbox_progress import bind_inbox_models

# The ranking's filter as literal SQL: the partial index ``cases_ranked`` is used only
# when a query's WHERE holds this very term (a bound parameter would not match it).
RANKED_SQL = "status IN (" + ", ".join(f"'{s}'" for s in RANKED) + ")"

# Timestamps are epoch seconds in DoubleField: peewee's FloatField is a 4-byte REAL
# on PostgreSQL, which would round today's epoch to the nearest couple of minutes.


def bind_models(db: Database) -> SimpleNamespace:
    class Base(Model):
        class Meta:
            database = db
            legacy_table_names = False

    class SchemaVersion(Base):
        version = IntegerField(primary_key=True)
        applied_at = DoubleField()

        class Meta:
            table_name = "schema_version"

    class SeenFrame(Base):
        """R2: the dedup key and its identity witness."""

        frame_id = TextField(primary_key=True)
        frame_text = TextField()
        crc8 = TextField()
        first_seen = DoubleField(index=True)
        last_seen = DoubleField()
        seen_count = IntegerField()
        last_source = TextField()

        class Meta:
            table_name = "seen_frames"
            # SQLite: the rows live in their key's own b-tree (one b-tree a witness, not a rowid
            # table and its key's index); migration 26 rebuilds an older store's table so.
            without_rowid = db.dialect == "sqlite"

    class Case(Base):
        """The applied ledger: one row per case, never evicted."""

        id = AutoField()
        case_key = TextField(unique=True)
        frame_id = TextField()
        frame_text = TextField()
        seq = IntegerField()
        site = TextField()
        need = TextField()
        headcount = IntegerField()
        pri = IntegerField()
        first_seen = DoubleField()
        updated_at = DoubleField()
        source = TextField()
        version = IntegerField(default=1)
        # The lifecycle (core.rules.lifecycle); a SQL default, since the ingest inserts raw rows.
        status = TextField(default="open", constraints=[SQL("DEFAULT 'open'")])

        class Meta:
            # Its one rank index, ``cases_ranked``, is partial and made by migration 14.
            table_name = "cases"

    class CaseHistory(Base):
        """Values a case held before an accepted correction replaced them."""

        id = AutoField()
        case = ForeignKeyField(Case, backref="history", on_delete="CASCADE")
        frame_id = TextField()
        frame_text = TextField()
        site = TextField()
        need = TextField()
        headcount = IntegerField()
        pri = IntegerField()
        replaced_at = DoubleField()
        quarantine_id = IntegerField(null=True)

        class Meta:
            table_name = "case_history"

    class CaseMark(Base):
        """One signed status change of a case; ``audit_seq`` is the audit entry that signed it."""

        id = AutoField()
        case = ForeignKeyField(Case, backref="marks", on_delete="CASCADE", index=True)
        case_key = TextField()
        frame_id = TextField()
        from_status = TextField()
        to_status = TextField()
        at = DoubleField()
        operator = TextField()
        reason = TextField()
        audit_seq = IntegerField(unique=True)

        class Meta:
            table_name = "case_marks"

    class Quarantine(Base):
        """R5: a newcomer that disagrees with what was applied first."""

        id = AutoField()
        frame_id = TextField()
        case_key = TextField(index=True)
        frame_text = TextField()
        first_frame_id = TextField()
        first_text = TextField()
        reason = TextField()
        first_seen = DoubleField()
        last_seen = DoubleField()
        seen_count = IntegerField(default=1)
        source = TextField()
        status = TextField(default="open", index=True)
        resolved_at = DoubleField(null=True)
        resolved_by = TextField(null=True)

        class Meta:
            table_name = "quarantine"
            indexes = ((("frame_id", "frame_text"), True),)

    class Settlement(Base):
        """R13: versions of a case an operator has ruled on; they never re-open."""

        id = AutoField()
        case_key = TextField(index=True)
        frame_text = TextField()
        payload = TextField()
        quarantine_id = IntegerField()

        class Meta:
            table_name = "settlements"

    class Reject(Base):
        """Frames that were not frames, kept escaped and bounded for diagnosing senders."""

        id = AutoField()
        ts = DoubleField(index=True)
        source = TextField()
        outcome = TextField()
        reason = TextField()
        frame_id = TextField()
        frame_text = TextField()
        file = TextField(null=True)
        line = IntegerField(null=True)

        class Meta:
            table_name = "rejects"

    class Activity(Base):
        """A bounded feed of recent outcomes for the console (oldest rows pruned)."""

        id = AutoField()
        ts = DoubleField()
        source = TextField()
        frame_id = TextField()
        outcome = TextField()
        reason = TextField()
        file = TextField(null=True)
        line = IntegerField(null=True)

        class Meta:
            table_name = "activity"

    class Counter(Base):
        """Delivery accounting: frames per arrival path and outcome."""

        source = TextField()
        outcome = TextField()
        slot = IntegerField(default=0)  # the writer's own row (``backend.writer_slot``), summed when read
        count = BigIntegerField(default=0)

        class Meta:
            table_name = "counters"
            primary_key = CompositeKey("source", "outcome", "slot")

    class ArrivalMinute(Base):
        """Frames per minute per path, for the activity sparkline."""

        minute = IntegerField()
        source = TextField()
        slot = IntegerField(default=0)
        count = BigIntegerField(default=0)

        class Meta:
            table_name = "arrival_minutes"
            primary_key = CompositeKey("minute", "source", "slot")

    class Total(Base):
        """Running totals kept in the ingest transaction, so status is O(1) on a big store.

        One row per name and writer slot, summed when read: receivers sharing a
        PostgreSQL store each add to their own row, so no row serialises them."""

        name = TextField()
        slot = IntegerField(default=0)
        value = BigIntegerField(default=0)

        class Meta:
            table_name = "totals"
            primary_key = CompositeKey("name", "slot")

    class Policy(Base):
        """Retention policy history; the newest row is in force."""

        id = AutoField()
        retention_seconds = IntegerField()
        set_at = DoubleField()
        set_by = TextField()
        reason = TextField(default="")
        is_exception = BooleanField(default=False)
        audit_id = IntegerField(null=True)

        class Meta:
            table_name = "retention_policy"

    class Eviction(Base):
        """R7: every eviction run that removed anything, and every manual one."""

        id = AutoField()
        ran_at = DoubleField()
        retention_seconds = IntegerField()
        cutoff = DoubleField()
        removed = IntegerField()
        oldest = DoubleField(null=True)
        newest = DoubleField(null=True)
        started_by = TextField()

        class Meta:
            table_name = "eviction_log"

    return SimpleNamespace(
        Base=Base,
        SchemaVersion=SchemaVersion,
        SeenFrame=SeenFrame,
        Case=Case,
        CaseHistory=CaseHistory,
        CaseMark=CaseMark,
        Quarantine=Quarantine,
        Settlement=Settlement,
        Reject=Reject,
        Activity=Activity,
        Counter=Counter,
        ArrivalMinute=ArrivalMinute,
        Total=Total,
        Policy=Policy,
        Eviction=Eviction,
        **bind_inbox_models(Base),
    )
