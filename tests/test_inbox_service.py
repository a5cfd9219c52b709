"""The two delivery paths end to end: a real watchdog observer, a real sweep, real files."""

from __future__ import annotations

import logging
import os
import time

import pytest

from core.inbox import HOLD_ENV, claimed_dir, file_counts, recent_files
from core.inbox.observer import WatchHandler
from tests.support.inbox_helpers import Holds, archived, drop, frame_lines, started_services, text_of, wait_for


@pytest.fixture
def start(home):
    with started_services(home, settle_time=0.3) as start:
        yield start


def settled_inbox(home) -> bool:
    return not [p for p in home.inbox.iterdir() if p.name != ".claimed"] and not list(claimed_dir(home).iterdir())


def test_a_renamed_file_is_applied_once_by_watch_and_its_resend_is_duplicates(home, start):
    service = start()
    lines = frame_lines("k", 3)
    r = service.receiver
    with service.sweep_paused():  # the observer's alone, however slow its events come
        drop(home, "session.txt", text_of(lines))
        wait_for(lambda: r.totals().applied == 3, what="the frames in the ledger")
        wait_for(lambda: archived(home) == ["session.txt"], what="the archive copy")
        drop(home, "resend.txt", text_of(lines))
        wait_for(lambda: archived(home) == ["resend.txt", "session.txt"], what="the re-send archived")
    assert r.per_source() == {"watch": {"APPLIED": 3, "DUPLICATE": 3}}
    assert r.totals().cases == 3
    assert file_counts(r) == {"watch": 2}
    assert service.health()["claims_won"] == {"watch": 2}


def test_with_the_observer_off_the_sweep_delivers_everything(home, start):
    service = start(observer=False, sweep_interval=0.1)
    for n in range(20):
        drop(home, f"f{n:02d}.txt", text_of(frame_lines(f"s{n}x", 2)), age=5 if n % 2 else 0)
    wait_for(lambda: len(archived(home)) == 20, what="20 files archived by the sweep")
    assert file_counts(service.receiver) == {"sweep": 20}
    assert service.receiver.per_source() == {"sweep": {"APPLIED": 40}}
    health = service.health()
    assert (health["observer"], health["sweep"]) == ("off", "running")


def test_with_the_sweep_paused_the_observer_alone_carries_every_one_of_200_files(home, start):
    """The observer misses nothing in a burst: with no sweep to cover for it, all 200 arrive by watch.
    (How the two share files when both run is a race: ``make bench`` prints it; the delivery family
    test checks each path is credited exactly what it won.)"""
    service = start(sweep_interval=0.05, settle_time=0.2)
    files, per_file = 200, 3
    r = service.receiver
    with service.sweep_paused():
        for n in range(files):
            drop(home, f"batch{n:03d}.txt", text_of(frame_lines(f"m{n}x", per_file)), age=30)
        wait_for(lambda: len(archived(home)) == files, what="200 files archived")
        wait_for(lambda: settled_inbox(home), what="an empty inbox")
    assert service.sweep_now() == 0  # nothing left for the sweep once it runs again
    assert file_counts(r) == {"watch": files}
    assert r.per_source() == {"watch": {"APPLIED": files * per_file}}
    totals = r.totals()
    assert (totals.applied, totals.duplicates, totals.cases) == (files * per_file, 0, files * per_file)
    assert service.health()["claims_won"] == {"watch": files}
    assert all(f["state"] == "done" for f in recent_files(r, limit=files))


def test_a_file_written_slowly_in_place_is_taken_whole(home, start):
    """Pieces cut anywhere, flushed one by one: however long the writer pauses (under the settle
    time), nothing is taken; once the file is old enough, it is taken whole."""
    service = start(settle_time=600, sweep_interval=0.05)
    text = text_of(frame_lines("slow", 12))
    pieces = [text[i : i + 37] for i in range(0, len(text), 37)]  # cut anywhere, mid-line included
    path = home.inbox / "slow.txt"
    with open(path, "w") as writer:
        for n, piece in enumerate(pieces):
            writer.write(piece)
            writer.flush()
            if n % 3 == 2:
                assert service.sweep_now() == 0  # a sweep that looks mid-write leaves it
        first = service.health()["last_sweep"]
        wait_for(lambda: service.health()["last_sweep"] > first, what="a sweep after the last write")
        assert service.receiver.totals().frames == 0 and not list(claimed_dir(home).iterdir())
        old = time.time() - 601
        os.utime(path, (old, old))  # as if the writer had finished ten minutes ago; its close is the event
    wait_for(lambda: archived(home) == ["slow.txt"], what="the slow file archived")
    r = service.receiver
    assert r.totals().applied == 12 and r.rejects() == []
    assert sum(file_counts(r).values()) == 1
    assert next(home.processed.rglob("slow.txt")).read_text() == text


def test_a_dead_observer_is_restarted_and_delivers_again(home, start):
    service = start(sweep_interval=3600)  # only the observer can deliver here
    first = service.observer.current
    first.stop()
    first.join(5)
    wait_for(lambda: service.observer.current is not first and service.health()["observer"] == "running",
             what="the observer restarted")
    drop(home, "after.txt", text_of(frame_lines("d", 2)))
    wait_for(lambda: service.receiver.totals().applied == 2, what="delivery by the new observer")
    assert file_counts(service.receiver) == {"watch": 1}


def test_the_sweep_covers_events_the_observer_never_saw(home, start):
    service = start(sweep_interval=0.1)
    service.observer.stop()  # dead, and the monitor has not noticed yet
    drop(home, "missed.txt", text_of(frame_lines("z", 2)), age=5)
    took = service.sweep_now()  # 0 when the periodic sweep or a restarted observer won it first
    wait_for(lambda: service.receiver.totals().applied == 2, what="the file's delivery")
    counts = file_counts(service.receiver)
    assert sum(counts.values()) == 1, counts
    (winner,) = counts
    assert winner == "sweep" or not took  # a file this sweep took is credited to the sweep
    assert service.receiver.per_source() == {winner: {"APPLIED": 2}}


def test_on_verdicts_sees_every_file_and_its_errors_never_stop_delivery(home, start, caplog):
    seen = []

    def callback(verdicts, result):
        seen.append((result.name, [v.outcome.value for v in verdicts]))
        raise RuntimeError("the UI fell over")

    service = start(on_verdicts=callback)
    drop(home, "a.txt", text_of(frame_lines("a", 1)))
    drop(home, "b.txt", text_of(frame_lines("b", 1)))
    wait_for(lambda: len(archived(home)) == 2, what="both files archived")
    assert ("a.txt", ["APPLIED"]) in seen and ("b.txt", ["APPLIED"]) in seen
    assert any("on_verdicts callback failed" in rec.getMessage() for rec in caplog.records)
    assert service.receiver.totals().applied == 2


def test_the_event_handler_never_raises(home, start, caplog):
    service = start()
    caplog.set_level(logging.ERROR, logger="ussd.inbox")
    WatchHandler(service.offer).dispatch(object())  # an event with no attributes at all
    assert any("event handler failed" in rec.getMessage() for rec in caplog.records)
    assert service.health()["observer"] == "running"


def test_a_stop_mid_file_leaves_it_claimed_and_a_restart_counts_nothing_twice(home, start, monkeypatch, tmp_path):
    holds = Holds(tmp_path / "holds")
    monkeypatch.setenv(*holds.env.popitem())  # the worker waits after each commit: stopped at a known line
    service = start(batch_lines=50)
    drop(home, "long.txt", text_of(frame_lines("L", 15000)))
    holds.next()  # the first batch committed, the second not begun
    holds.release()
    _claim, line = holds.where(holds.next())  # the second
    assert service.stop(timeout=60)
    left = recent_files(service.receiver)[0]
    assert (left["state"], left["line"]) == ("claimed", line) and line == 100
    assert len(list(claimed_dir(home).iterdir())) == 1
    monkeypatch.delenv(HOLD_ENV)
    again = start(batch_lines=5000)
    wait_for(lambda: archived(home) == ["long.txt"], what="the resumed file archived")
    assert again.receiver.per_source() == {"watch": {"APPLIED": 15000}}
    assert file_counts(again.receiver) == {"watch": 1}


def test_health_reports_both_paths_and_what_is_waiting(home, start):
    service = start(settle_time=600, sweep_interval=0.1)
    (home.inbox / "inplace.txt").write_text(text_of(frame_lines("h", 1)))  # written in place: must settle
    wait_for(lambda: service.health()["last_sweep"] is not None, what="a sweep")
    health = service.health()
    assert health["observer"] == "running" and health["sweep"] == "running"
    assert health["files_waiting"] == 1 and health["claims_lost"] == 0 and health["last_error"] is None
    assert service.sweep_now() == 0  # not settled: the sweep leaves it
    assert service.receiver.totals().frames == 0
    service.stop()
    assert service.health()["observer"] == "off" and service.health()["sweep"] == "off"


def test_odd_things_in_the_inbox_are_skipped_logged_once_and_left_alone(home, start, caplog, tmp_path):
    caplog.set_level(logging.WARNING, logger="ussd.inbox")
    target = tmp_path / "outside.txt"
    target.write_text(text_of(frame_lines("o", 1)))
    service = start(sweep_interval=0.05)
    os.symlink(target, home.inbox / "link.txt")
    os.mkfifo(home.inbox / "pipe")
    for _ in range(3):
        service.sweep_now()  # three sweeps here, and those of the sweep thread besides
    first = service.health()["last_sweep"]
    wait_for(lambda: service.health()["last_sweep"] > first, what="a sweep by the sweep thread too")
    skips = [rec.getMessage() for rec in caplog.records if "skipping" in rec.getMessage()]
    assert sorted(skips) == ["inbox: skipping link.txt: symlink (never read)", "inbox: skipping pipe: FIFO (never read)"]
    assert sorted(p.name for p in home.inbox.iterdir()) == [".claimed", "link.txt", "pipe"]
    assert service.health()["files_waiting"] == 0 and service.receiver.totals().frames == 0


def test_a_file_settles_once_the_services_clock_has_moved_on_by_the_settle_time(tmp_path):
    """Settling reads the clock it is given: a test moves it on instead of waiting out the settle time."""
    from core.inbox.settling import Settling
    from tests.support.clock import TestClock

    clock = TestClock()
    settling = Settling(600.0, clock)
    path = tmp_path / "arriving.txt"
    path.write_text("a1-1 H1|1|A|MED|1|1|#00\n")
    st = os.lstat(path)
    assert not settling.settled(str(path), st)
    clock.advance(599.0)
    assert not settling.settled(str(path), st)
    clock.advance(2.0)
    assert settling.settled(str(path), st)
