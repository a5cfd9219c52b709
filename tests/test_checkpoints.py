"""The write-ahead log is checked into the store file beside the writer, not inside its commit
(core/store/checkpoints.py): nothing is left unchecked, a closed store leaves no log, and a
checkpoint that cannot run changes nothing."""

from __future__ import annotations

import os
import sqlite3
import threading

from core import Receiver
from core.store.checkpoints import Checkpoints
from tests.support.helpers import frame
from tests.support.waiting import wait_for

T0 = 1_700_000_000
# Enough first arrivals that their log passes SQLite's own checkpoint threshold (1,000 pages) many times.
FRAMES = [(f"k{i}-1", frame(1, f"S{i % 40}", "WAT", 1 + i % 30, i % 100)) for i in range(40_000)]


def checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ussd-wal-checkpoint"]


def test_a_big_commit_is_checked_in_by_the_checkpointer_not_by_the_commit(tmp_path):
    db = tmp_path / "store.db"
    with Receiver(str(db)) as r:
        assert r.db.execute_sql("PRAGMA wal_autocheckpoint").fetchone()[0] == 0  # the commit leaves it
        before = os.path.getsize(db)
        r.ingest_many(FRAMES, now=T0)
        wait_for(lambda: r.db.checkpoints.passes >= 1, what="a checkpoint after the commit")
        r.db.checkpoints.wait()
        # The store file itself holds the batch now (the log's pages were copied into it), and the
        # log, read by SQLite on the next open, agrees: every frame of it is checked in.
        assert os.path.getsize(db) > before + 4 * 1024 * 1024
        con = sqlite3.connect(db)
        try:
            busy, logged, checked = con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            assert busy == 0 and logged == checked
            assert con.execute("SELECT count(*) FROM cases").fetchone()[0] == len(FRAMES)
        finally:
            con.close()
    assert checkpoint_threads() == []


def test_a_closed_store_leaves_no_log_and_no_thread(tmp_path):
    db = tmp_path / "store.db"
    with Receiver(str(db)) as r:
        r.ingest_many(FRAMES, now=T0)  # closed at once: the checkpoint it woke may still be running
    assert not os.path.exists(f"{db}-wal")
    assert checkpoint_threads() == []
    with Receiver(str(db)) as r:
        assert r.totals().cases == len(FRAMES)


def test_pokes_while_one_runs_are_one_more_pass_and_the_thread_ends(tmp_path):
    db = tmp_path / "store.db"
    with Receiver(str(db)) as r:
        r.ingest_many(FRAMES[:100], now=T0)
    checkpoints = Checkpoints(str(db))
    for _ in range(50):
        checkpoints.poke()
    checkpoints.wait()
    assert 1 <= checkpoints.passes <= 50
    assert checkpoint_threads() == []


def test_a_checkpoint_that_cannot_run_is_let_go(tmp_path):
    """A store gone from under its receiver: the pass fails quietly, makes no new file, and the next
    poke tries again."""
    (tmp_path / "gone").mkdir()
    checkpoints = Checkpoints(str(tmp_path / "gone" / "store.db"))
    checkpoints.poke()
    checkpoints.wait()
    checkpoints.poke()
    checkpoints.wait()
    assert checkpoints.passes == 2 and checkpoint_threads() == []
    assert list((tmp_path / "gone").iterdir()) == []  # no store made again by the checkpoint
