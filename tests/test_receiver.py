"""Receiver behaviour beyond the public scenarios: R3-R13 details, retention, accounting."""

import pytest

from core import Outcome, Receiver, RetentionError
from core.rules.retention import DAY
from tests.support.helpers import bad_trailer, frame, is_seen

T0 = 1_700_000_000
MED = frame(1, "Kakuma1", "MED", 3, 86)
SHE = frame(2, "Kakuma2", "SHE", 8, 71)
WAT = frame(3, "Kakuma1", "WAT", 12, 69)


def outcomes(verdicts):
    return [(v.outcome.value, v.reason) for v in verdicts]


def test_r9_full_resend_is_not_double_counted(receiver):
    session = [("k1-1", MED), ("k2-2", SHE), ("k3-3", WAT)]
    receiver.ingest_many(session, now=T0)
    receiver.ingest_many(session, now=T0 + 60)
    receiver.ingest_many([session[2]], now=T0 + 120)  # partial re-send of WAT 12
    assert receiver.headcount_total() == 23
    ranking = receiver.ranking()
    assert [c["need"] for c in ranking] == ["MED", "SHE", "WAT"]
    assert receiver.totals()["duplicates"] == 4


def test_r3_duplicate_counts_path_and_time(receiver):
    receiver.ingest("k1-1", MED, now=T0, source="watch")
    v = receiver.ingest("k1-1", MED, now=T0 + 5, source="sweep")
    assert (v.outcome, v.reason) == (Outcome.DUPLICATE, "retransmit") and not v.alert
    row = receiver.m.SeenFrame.get_by_id("k1-1")
    assert (row.seen_count, row.last_seen, row.last_source, row.first_seen) == (2, T0 + 5, "sweep", T0)
    assert receiver.per_source() == {"watch": {"APPLIED": 1}, "sweep": {"DUPLICATE": 1}}


def test_r5_conflict_is_quarantined_once_and_first_wins(receiver):
    receiver.ingest("rec1", MED, now=T0)
    changed = frame(1, "Kakuma1", "MED", 9, 86)
    v1 = receiver.ingest("rec1", changed, now=T0 + 1)
    v2 = receiver.ingest("rec1", changed, now=T0 + 2)
    assert (v1.outcome, v1.reason, v1.alert) == (Outcome.CONFLICT_QUARANTINED, "same_frame_id_different_payload", True)
    assert (v2.outcome, v2.reason, v2.alert) == (Outcome.CONFLICT_QUARANTINED, "already_quarantined", False)
    q = receiver.quarantine()
    assert len(q) == 1 and q[0]["seen_count"] == 2
    assert q[0]["first_text"] == MED and q[0]["frame_text"] == changed
    assert receiver.headcount_total() == 3
    assert receiver.totals()["conflicts_open"] == 1


def test_conflicts_within_one_batch(receiver):
    changed = frame(1, "Kakuma1", "MED", 9, 86)
    vs = receiver.ingest_many([("rec1", MED), ("rec1", changed), ("rec1", changed), ("rec1", MED)], now=T0)
    assert outcomes(vs) == [
        ("APPLIED", "new"),
        ("CONFLICT_QUARANTINED", "same_frame_id_different_payload"),
        ("CONFLICT_QUARANTINED", "already_quarantined"),
        ("DUPLICATE", "retransmit"),
    ]
    assert receiver.quarantine()[0]["seen_count"] == 2


def test_r12_rerank_and_same_case_conflict(receiver):
    a1 = frame(1, "Dadaab2", "WAT", 40, 77)
    receiver.ingest("A7f3-1", a1, now=T0)
    assert receiver.ingest("A7f3-2", frame(2, "Dadaab2", "WAT", 40, 77), now=T0 + 1).reason == "rerank"
    # the re-ranked copy is now a witness of its own: a repeat is a plain retransmit
    assert receiver.ingest("A7f3-2", frame(2, "Dadaab2", "WAT", 40, 77), now=T0 + 2).reason == "retransmit"
    v = receiver.ingest("A7f3-3", frame(3, "Dadaab2", "WAT", 41, 77), now=T0 + 3)
    assert (v.outcome, v.reason) == (Outcome.CONFLICT_QUARANTINED, "same_case_different_payload")
    assert receiver.headcount_total() == 40 and receiver.count_cases() == 1


def test_opaque_ids_are_not_mixed_with_record_ids(receiver):
    receiver.ingest("A7f3", frame(1, "Dadaab2", "WAT", 40, 77), now=T0)
    v = receiver.ingest("A7f3-1", frame(1, "Dadaab2", "WAT", 40, 77), now=T0)
    assert v.outcome is Outcome.APPLIED  # different identity spaces: 'A7f3' is a key of its own


def test_r1_reject_leaves_no_state_then_good_copy_applies(receiver):
    v = receiver.ingest("rec9", bad_trailer(MED), now=T0)
    assert (v.outcome, v.reason) == (Outcome.REJECT_BAD_CRC, "bad_trailer")
    assert not is_seen(receiver, "rec9")
    assert receiver.ingest("rec9", MED, now=T0 + 1).outcome is Outcome.APPLIED
    rejects = receiver.rejects()
    assert rejects[0]["reason"] == "bad_trailer" and rejects[0]["frame_id"] == "rec9"


def test_reject_text_is_stored_escaped_and_bounded(receiver):
    hostile = "[bold]\x1b]0;owned\x07" + "A" * 5000
    v = receiver.ingest("x\x1b[2J", hostile, now=T0)
    assert v.outcome is Outcome.REJECT_BAD_FORMAT
    row = receiver.rejects()[0]
    for value in (row["frame_id"], row["frame_text"], v.frame_id):
        assert value.isascii() and value.isprintable()
    assert len(row["frame_text"]) < 260


def test_r11_after_eviction_duplicate_and_conflict(receiver):
    receiver.ingest("old-1", MED, now=T0)
    assert receiver.evict(now=T0 + 31 * DAY) == 1
    assert not is_seen(receiver, "old-1")
    v = receiver.ingest("old-1", MED, now=T0 + 32 * DAY)
    assert (v.outcome, v.reason) == (Outcome.DUPLICATE, "after_eviction")
    v = receiver.ingest("old-1", frame(1, "Kakuma1", "MED", 4, 86), now=T0 + 33 * DAY)
    assert v.outcome is Outcome.CONFLICT_QUARANTINED
    assert receiver.headcount_total() == 3 and receiver.count_cases() == 1


def test_r7_eviction_is_by_age_and_logged(receiver):
    receiver.ingest_many([(f"r{i}-1", frame(1, "S", "FOO", i, 1)) for i in range(5)], now=T0)
    receiver.ingest_many([(f"n{i}-1", frame(1, "S", "FOO", i, 1)) for i in range(3)], now=T0 + 10 * DAY)
    assert receiver.evict(now=T0 + 20 * DAY, started_by="schedule") == 0
    assert receiver.evictions() == []  # a scheduled run that removed nothing is not logged
    assert receiver.evict(now=T0 + 20 * DAY, started_by="cli") == 0
    assert receiver.evictions()[0]["started_by"] == "cli"  # a manual run always is
    assert receiver.evict(now=T0 + 31 * DAY, started_by="schedule", chunk=2) == 5
    log = receiver.evictions()[0]
    assert (log["removed"], log["oldest"], log["newest"], log["retention_seconds"]) == (5, T0, T0, 30 * DAY)
    assert log["cutoff"] == T0 + 31 * DAY - 30 * DAY
    assert receiver.totals()["seen_frames"] == 3


def test_r7_retention_rules(receiver):
    assert receiver.retention_seconds() == 30 * DAY
    with pytest.raises(RetentionError, match="72 hours"):
        receiver.set_retention(71 * 3600, signed=True)
    with pytest.raises(RetentionError, match="signed exception"):
        receiver.set_retention(10 * DAY)
    # A change comes with its signed audit entry (tests/test_signed_actions.py), or not at all.
    with pytest.raises(RetentionError, match="signed by an operator"):
        receiver.set_retention(60 * DAY)
    assert receiver.retention_seconds() == 30 * DAY and receiver.retention()["fault"] is None


def test_sqlite_store_is_durable_across_reopen(store_path):
    with Receiver(store_path) as r:
        r.ingest_many([("k1-1", MED), ("k2-2", SHE)], now=T0)
    with Receiver(store_path) as r:
        assert r.ingest("k1-1", MED, now=T0 + 1).outcome is Outcome.DUPLICATE
        assert r.headcount_total() == 11
        assert r.db.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert r.db.execute_sql("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert r.db.execute_sql("PRAGMA foreign_keys").fetchone()[0] == 1


def test_batch_equals_one_at_a_time(new_store):
    items = [("k1-1", MED), ("k1-1", frame(1, "Kakuma1", "MED", 5, 86)), ("k2-2", SHE), ("k2-3", frame(3, "Kakuma2", "SHE", 8, 71)),
             ("bad", "H1|x"), ("k3-3", bad_trailer(WAT)), ("k3-3", WAT), ("k2-2", SHE)]
    with Receiver(new_store()) as a, Receiver(new_store()) as b:
        batch = a.ingest_many(items, now=T0)
        single = [b.ingest(fid, text, now=T0) for fid, text in items]
        assert outcomes(batch) == outcomes(single)
        assert a.totals() == b.totals()


def test_many_chunks_share_state(receiver):
    receiver.chunk_frames = 3
    items = [(f"r{i % 4}-1", frame(1, "S", "FOO", i % 4, 1)) for i in range(10)]
    vs = receiver.ingest_many(items, now=T0)
    assert [v.outcome.value for v in vs].count("APPLIED") == 4
    assert receiver.count_cases() == 4


def test_within_hook_runs_in_the_same_transaction(receiver):
    def boom():
        raise RuntimeError("crash before commit")

    with pytest.raises(RuntimeError):
        receiver.ingest_many([("k1-1", MED)], now=T0, within=boom)
    assert receiver.count_cases() == 0 and not is_seen(receiver, "k1-1")
    assert receiver.totals()["frames"] == 0


def test_read_queries_page_and_sort(receiver):
    receiver.ingest_many([(f"r{i}-1", frame(1, f"S{i % 3}", "FOO" if i % 2 else "WAT", i + 1, 50 + i % 5)) for i in range(30)], now=T0)
    page = receiver.cases(limit=10, offset=10, sort="headcount", descending=False)
    assert [c["headcount"] for c in page] == list(range(11, 21))
    assert receiver.count_cases("S1") == 10
    ranking = receiver.ranking(limit=5)
    keys = [(-c["pri"], -c["headcount"]) for c in ranking]
    assert keys == sorted(keys) and ranking[0]["rank"] == 1
    by_need = receiver.headcount_by("need")
    assert sum(x["headcount"] for x in by_need) == receiver.headcount_total() == sum(range(1, 31))
    with pytest.raises(ValueError):
        receiver.cases(sort="frame_text; drop table cases")


def test_bad_source_label_is_refused(receiver):
    with pytest.raises(ValueError):
        receiver.ingest("k1-1", MED, source="no spaces please")


def test_offers_and_the_old_tuples_are_one_batch(new_store):
    """``Offer`` is the item type; the 2- and 4-tuples callers pass are converted to it."""
    from core import Offer

    tuples = [("k1-1", MED, "feed.txt", 1), ("k2-2", SHE), ("bad", "H1|x", "feed.txt", 3)]
    with Receiver(new_store()) as a, Receiver(new_store()) as b:
        plain = a.ingest_many(tuples, now=T0, source="cli")
        named = b.ingest_many([Offer(*t) for t in tuples], now=T0, source="cli")
        assert plain == named
        assert [(v.file, v.line) for v in named] == [("feed.txt", 1), (None, None), ("feed.txt", 3)]
        assert a.totals() == b.totals()


def test_each_row_type_is_its_tables_insert_columns(receiver):
    """A row type names columns of its table, and every column without a default is one of them,
    so the writer, which takes its column list from the row type, cannot drop a column."""
    from peewee import AutoField

    from core.rules.batch import ActivityRow, CaseRow, QuarantineRow, RejectRow, SeenRow

    m = receiver.m
    for model, row in [(m.SeenFrame, SeenRow), (m.Case, CaseRow), (m.Quarantine, QuarantineRow),
                       (m.Reject, RejectRow), (m.Activity, ActivityRow)]:
        fields = model._meta.fields
        assert set(row._fields) <= set(fields), (row.__name__, set(row._fields) - set(fields))
        required = {name for name, f in fields.items()
                    if not f.null and f.default is None and not isinstance(f, AutoField)}
        assert required <= set(row._fields), (row.__name__, required - set(row._fields))
