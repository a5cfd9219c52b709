"""Fault injection: a full disk, a read-only store, a store locked too long, an
unreadable file, a file that vanishes, dying threads. Each time the receiver keeps what it
committed, leaves what it could not take in the inbox, says what is wrong in one line (log and
``InboxService.health()``), and takes up the work by itself once the fault clears."""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from console.cli import main
from core.store import backend as store
from core import Receiver
from core.inbox import claimed_dir, deliver, recent_files
from tests.support.helpers import ROOT
from tests.support.inbox_helpers import archived, drop, frame_lines, started_services, text_of, wait_for


@pytest.fixture
def start(home):
    with started_services(home, settle_time=0.2, sweep_interval=0.1) as start:
        yield start


def claimed(home) -> list[str]:
    return sorted(p.name.partition("~")[2] for p in claimed_dir(home).iterdir() if not p.name.startswith("."))


def warnings(caplog, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and text in r.getMessage()]


def no_tracebacks(caplog) -> bool:
    """Nothing an operator reads carries a traceback: no record logged with one at WARNING or above."""
    return not [r for r in caplog.records if r.levelno >= logging.WARNING and r.exc_info]


# -- the store --------------------------------------------------------------------------------


def test_disk_full_mid_file_keeps_the_committed_batches_and_resumes_when_space_returns(home, start, caplog):
    caplog.set_level(logging.INFO, logger="ussd")
    service = start(observer=False, sweep=False, batch_lines=200)  # this thread's sweeps only
    db = service.receiver.db
    # SQLITE_FULL for real: the store may not grow past a few batches, on every connection opened from now on.
    db.pragma("max_page_count", db.pragma("page_count") + 40, permanent=True)
    drop(home, "big.txt", text_of(frame_lines("full", 6000)), age=5)
    service.sweep_now()

    health = service.health()
    assert health["state"] == "fault" and "database or disk is full" in health["last_error"]
    row = recent_files(service.receiver)[0]
    assert row["state"] == "claimed" and 0 < row["line"] < 6000
    # What was kept is exactly what committed with the file's progress, and it stays.
    assert service.receiver.totals().frames == row["frames"] == row["line"]
    assert claimed(home) == ["big.txt"] and archived(home) == []
    service.sweep_now()
    assert len(warnings(caplog, "database or disk is full")) == 1  # said once, not once per sweep

    db.pragma("max_page_count", 2**31 - 1, permanent=True)  # space again
    service.sweep_now()
    health = service.health()
    assert (health["state"], health["last_error"], health["faults"]) == ("ok", None, [])
    assert "database or disk is full" in health["last_fault"] and health["recovered_at"] is not None
    assert archived(home) == ["big.txt"] and claimed(home) == []
    assert service.receiver.per_source() == {"sweep": {"APPLIED": 6000}}  # each frame once
    assert any("fault cleared" in r.getMessage() for r in caplog.records)
    assert no_tracebacks(caplog)


def test_a_read_only_store_leaves_the_file_waiting_and_takes_it_once_writable(home, start, caplog):
    caplog.set_level(logging.INFO, logger="ussd")
    service = start(observer=False, sweep=False)
    db = service.receiver.db
    db.pragma("query_only", 1, permanent=True)  # SQLite refuses every write: "attempt to write a readonly database"
    drop(home, "a.txt", text_of(frame_lines("ro", 30)), age=5)
    service.sweep_now()
    service.sweep_now()
    health = service.health()
    assert health["state"] == "fault" and "readonly database" in health["last_error"]
    assert health["files_waiting"] == 1 and claimed(home) == ["a.txt"]
    assert len(warnings(caplog, "readonly database")) == 1
    assert service.receiver.totals().frames == 0 and recent_files(service.receiver) == []

    db.pragma("query_only", 0, permanent=True)
    service.sweep_now()
    assert service.health()["state"] == "ok" and archived(home) == ["a.txt"]
    assert service.receiver.per_source() == {"sweep": {"APPLIED": 30}}
    assert no_tracebacks(caplog)


def test_a_thread_whose_connection_went_read_only_reopens_it_and_the_fault_is_told_once(home, start, caplog):
    """SQLite opens a read-only store read-only and the connection stays so after the file is
    writable again. The loaded watch run showed it: a second thread that had opened its connection
    during the fault failed its first write after the fault cleared and raised it a second time.
    Here one thread's connection is made read-only by hand (``query_only`` on it alone), another
    thread meets the fault and sees it clear; the first thread must then deliver on a new connection."""
    import queue
    import threading

    caplog.set_level(logging.INFO, logger="ussd")
    service = start(observer=False, sweep=False)
    jobs: queue.Queue = queue.Queue()
    done: queue.Queue = queue.Queue()

    def other_thread():
        while (job := jobs.get()) is not None:
            try:
                done.put(job())
            except Exception as exc:  # noqa: BLE001 - handed to the test thread
                done.put(exc)

    def in_other_thread(job):
        jobs.put(job)
        result = done.get(timeout=60)
        if isinstance(result, Exception):
            raise result
        return result

    worker = threading.Thread(target=other_thread, daemon=True)
    worker.start()
    try:
        drop(home, "a.txt", text_of(frame_lines("ta", 3)), age=5)
        assert in_other_thread(service.sweep_now) == 1
        in_other_thread(lambda: service.receiver.db.execute_sql("PRAGMA query_only = 1"))  # this thread's only
        drop(home, "a0.txt", text_of(frame_lines("t0", 3)), age=5)
        assert service.sweep_now() == 1  # the test thread's connection, opened while all was well

        service.receiver.db.execute_sql("PRAGMA query_only = 1")  # the test thread meets the fault ...
        drop(home, "b.txt", text_of(frame_lines("tb", 3)), age=5)
        service.sweep_now()
        assert service.health()["state"] == "fault" and claimed(home) == ["b.txt"]
        service.sweep_now()  # ... and, on a new connection, sees it clear
        assert service.health()["state"] == "ok" and archived(home) == ["a.txt", "a0.txt", "b.txt"]

        drop(home, "c.txt", text_of(frame_lines("tc", 3)), age=5)
        assert in_other_thread(service.sweep_now) == 1
        assert service.health()["state"] == "ok" and archived(home) == ["a.txt", "a0.txt", "b.txt", "c.txt"]
    finally:
        jobs.put(None)
        worker.join(timeout=60)
    assert len(warnings(caplog, "readonly database")) == 1
    assert sum("fault cleared" in r.getMessage() for r in caplog.records) == 1
    assert service.receiver.per_source() == {"sweep": {"APPLIED": 12}}

LOCK_HOLDER = textwrap.dedent("""
    import sqlite3, sys
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    sys.stdin.readline()  # held until the test says so, however slow the machine
    con.execute("COMMIT")
""")


@pytest.fixture
def short_busy_timeout(monkeypatch):
    """A 0.2 s busy timeout, so "locked longer than the timeout" takes a second, not five."""
    monkeypatch.setattr(store, "BUSY_TIMEOUT_MS", 200)
    monkeypatch.setitem(store.SQLITE_PRAGMAS, "busy_timeout", 200)


def hold_lock(db_path) -> subprocess.Popen:
    """Another process holding the store's write lock until a line arrives on its stdin."""
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(db_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_a_store_locked_by_another_process_past_the_busy_timeout_delays_but_loses_nothing(
        home, start, short_busy_timeout, caplog, capsys):
    caplog.set_level(logging.INFO, logger="ussd")
    service = start()  # both paths, real threads
    holder = hold_lock(home.db)
    drop(home, "during.txt", text_of(frame_lines("lk", 40)))
    wait_for(lambda: "locked" in (service.health()["last_error"] or ""), what="the lock reported as a fault")
    assert service.receiver.totals().frames == 0  # reading still works while it is locked

    # While it is locked, the command line says so in one line and exits 2; status still reads.
    outside = home.root / "by-hand.txt"
    outside.write_text(text_of(frame_lines("hand", 2)))
    assert main(["ingest", "--home", str(home.root), str(outside)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "locked by another process for too long" in err[0]
    assert main(["status", "--home", str(home.root), "--json"]) == 0
    capsys.readouterr()

    holder.communicate("release\n", timeout=60)
    wait_for(lambda: archived(home) == ["during.txt"], what="the file taken once the lock went")
    wait_for(lambda: service.health()["state"] == "ok", what="the fault cleared")
    assert service.receiver.totals().applied == 40 and service.receiver.totals().frames == 40
    assert no_tracebacks(caplog)


def test_the_command_line_on_a_full_or_read_only_store_is_one_line(home, monkeypatch, capsys):
    Receiver(str(home.db)).close()
    pages = sqlite3.connect(home.db).execute("PRAGMA page_count").fetchone()[0]
    big = home.root / "big.txt"
    big.write_text(text_of(frame_lines("cli", 5000)))
    monkeypatch.setitem(store.SQLITE_PRAGMAS, "max_page_count", pages + 5)
    assert main(["ingest", "--home", str(home.root), str(big)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ussd-console: error: store: database or disk is full"]

    monkeypatch.delitem(store.SQLITE_PRAGMAS, "max_page_count")
    monkeypatch.setitem(store.SQLITE_PRAGMAS, "query_only", 1)
    assert main(["status", "--home", str(home.root), "--json"]) == 0  # a read-only store can be read
    capsys.readouterr()
    assert main(["ingest", "--home", str(home.root), str(big)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ussd-console: error: store: attempt to write a readonly database"]
    monkeypatch.undo()
    with Receiver(str(home.db)) as r:
        assert r.totals().frames == 0  # the failed batches left nothing behind


# -- files ----------------------------------------------------------------------------------


def _deny(monkeypatch, fragment: str) -> None:
    """``open`` of any path containing ``fragment`` fails with EACCES (the tests run as root in CI,
    and root reads a chmod 000 file; the real thing runs in a subprocess test below)."""
    real_open = os.open

    def fake_open(path, flags, *args, **kwargs):
        if fragment in os.fsdecode(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)


def test_an_unreadable_file_stays_in_the_inbox_and_is_taken_once_readable(home, start, monkeypatch, caplog, capsys):
    caplog.set_level(logging.INFO, logger="ussd")
    service = start(observer=False, sweep=False)
    drop(home, "good.txt", text_of(frame_lines("g", 3)), age=5)
    drop(home, "secret.txt", text_of(frame_lines("s", 4)), age=5)
    _deny(monkeypatch, "secret")
    service.sweep_now()
    service.sweep_now()
    assert archived(home) == ["good.txt"]
    assert (home.inbox / "secret.txt").exists() and claimed(home) == []  # left where the gateway put it
    health = service.health()
    assert health["state"] == "fault"
    assert health["last_error"] == "secret.txt: Permission denied; left in the inbox, retried every sweep"
    assert health["files_waiting"] == 1
    assert len(warnings(caplog, "secret.txt: Permission denied")) == 1

    # By hand: one line, exit 2, and the file is still there.
    assert main(["ingest", "--home", str(home.root), str(home.inbox / "secret.txt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Permission denied" in err[0]
    assert (home.inbox / "secret.txt").exists()

    monkeypatch.undo()
    service.sweep_now()
    assert archived(home) == ["good.txt", "secret.txt"] and service.health()["state"] == "ok"
    assert service.receiver.totals().applied == 7
    assert no_tracebacks(caplog)


def test_files_that_vanish_between_listing_and_claiming_are_no_fault(home, start, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="ussd")
    service = start(observer=False, sweep=False)
    for name in ("a.txt", "b.txt", "c.txt", "d.txt"):
        drop(home, name, text_of(frame_lines(name[0], 2)), age=5)
    listing = service._listing

    def listing_then_b_goes(folder):
        names = listing(folder)
        if folder == service._inbox and (home.inbox / "b.txt").exists():
            os.unlink(home.inbox / "b.txt")  # removed by someone right after the sweep listed it
        return names

    real_rename = os.rename

    def d_goes_before_the_claim(src, dst, *args, **kwargs):
        if os.fsdecode(src).endswith("d.txt"):
            os.unlink(src)  # taken by another process between the look and the rename
        return real_rename(src, dst, *args, **kwargs)

    monkeypatch.setattr(service, "_listing", listing_then_b_goes)
    monkeypatch.setattr(os, "rename", d_goes_before_the_claim)
    service.sweep_now()  # b is passed over (gone when looked at); d's claim is lost
    assert archived(home) == ["a.txt", "c.txt"]
    health = service.health()
    assert health["state"] == "ok" and health["last_error"] is None and health["claims_lost"] == 1
    # A claimed file that is gone by the time it is opened is lost too, quietly.
    result = deliver(claimed_dir(home) / "0-0-0.sweep~ghost.txt", "sweep", service.receiver, home)
    assert (result.status, result.reason) == ("lost", "gone")
    assert [r.getMessage() for r in caplog.records if "claim lost" in r.getMessage()] == [
        "claim lost by sweep: d.txt was taken by another path",
        "claim lost by sweep: ghost.txt was gone before any of it was read (removed by someone else)",
    ]
    assert not warnings(caplog, "")


# -- threads ----------------------------------------------------------------------------------


def test_an_observer_thread_that_dies_is_a_fault_until_it_is_restarted(home, start, caplog, capfd):
    caplog.set_level(logging.INFO, logger="ussd")
    service = start(sweep_interval=3600)  # only the observer delivers here
    first = service.observer.current
    emitter = next(iter(first.emitters))

    def broken(*_args, **_kwargs):
        raise RuntimeError("inotify fell over")

    emitter.queue_events = broken  # its thread raises on its next round, and dies
    (home.inbox / ".wake").write_text("")  # ends the round it is blocked in (a dotfile: never read)
    wait_for(lambda: not emitter.is_alive(), what="the emitter thread to die")
    wait_for(lambda: service.observer.current is not first and service.health()["state"] == "ok", what="the restart")
    health = service.health()
    assert health["observer"] == "running" and health["observer_restarts"] == 1
    assert health["last_fault"] == "the inbox observer died: inotify fell over; restarting it"
    drop(home, "after.txt", text_of(frame_lines("o", 2)))
    wait_for(lambda: archived(home) == ["after.txt"], what="delivery by the new observer")
    assert service.receiver.per_source() == {"watch": {"APPLIED": 2}}
    assert "Traceback" not in capfd.readouterr().err  # threading's own hook would have printed one
    assert warnings(caplog, "inotify fell over")


def test_a_worker_thread_that_dies_is_restarted(home, start, caplog):
    caplog.set_level(logging.INFO, logger="ussd")
    service = start(sweep_interval=3600)
    worker = service._threads["worker"]
    real = service._next_due_in
    calls = []

    def fails_once():
        if not calls:
            calls.append(1)
            raise RuntimeError("worker bug")
        return real()

    service._next_due_in = fails_once
    wait_for(lambda: service._threads["worker"] is not worker and service.health()["state"] == "ok",
             what="a new worker")
    assert service.health()["last_fault"].startswith("the inbox worker thread stopped: worker bug")
    drop(home, "next.txt", text_of(frame_lines("w", 2)))
    wait_for(lambda: archived(home) == ["next.txt"], what="delivery by the new worker")


# -- a real watch process: real permissions, a real file size limit ------------------------------------


def _drop_dac_capabilities() -> None:
    """In the child: as root, give up reading and writing past file permissions (the tests run as
    root in CI, where chmod alone proves nothing). PR_CAPBSET_DROP, then exec drops them for good."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _watch(home, tmp_path, preexec=None, name="watch"):
    err = open(tmp_path / f"{name}-stderr.txt", "w")
    proc = subprocess.Popen([sys.executable, "-m", "console.cli", "watch", "--home", str(home.root)], cwd=ROOT,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=preexec)
    log = home.logs / "receiver.log"
    wait_for(lambda: proc.poll() is not None or (log.exists() and "watching " in log.read_text()), timeout=60,
             what="watch to start")
    assert proc.poll() is None, (tmp_path / f"{name}-stderr.txt").read_text()
    return proc, err


def test_a_watch_process_under_real_permissions_waits_out_a_read_only_store_and_an_unreadable_file(
        home, tmp_path):
    preexec = _drop_dac_capabilities if os.geteuid() == 0 else None
    if preexec is not None:
        probe = subprocess.run(["cat", "/proc/self/status"], preexec_fn=preexec, capture_output=True, text=True)
        if probe.returncode != 0:
            pytest.skip(f"cannot drop capabilities here: {probe.stderr.strip()}")
    home.config.write_text("[inbox]\nsweep_interval = 0.1\nsettle_time = 0.1\n")
    Receiver(str(home.db)).close()
    store_files = [p for p in home.root.iterdir() if p.name.startswith("receiver.db")]
    for p in store_files:
        p.chmod(0o444)
    proc, err = _watch(home, tmp_path, preexec)
    try:
        drop(home, "first.txt", text_of(frame_lines("p", 5)))
        log = home.logs / "receiver.log"
        wait_for(lambda: "store: attempt to write a readonly database" in log.read_text(), what="the store fault")
        assert claimed(home) == ["first.txt"]
        for p in home.root.iterdir():
            if p.name.startswith("receiver.db"):
                p.chmod(0o644)
        wait_for(lambda: archived(home) == ["first.txt"], what="the file taken once the store was writable")

        staged = home.root / "secret.txt"
        staged.write_text(text_of(frame_lines("q", 3)))
        staged.chmod(0o000)
        secret = home.inbox / "secret.txt"
        os.rename(staged, secret)
        drop(home, "other.txt", text_of(frame_lines("r", 2)))
        wait_for(lambda: "other.txt" in archived(home), what="the readable file")
        wait_for(lambda: "secret.txt: Permission denied" in log.read_text(), what="the permission fault")
        assert secret.exists()
        secret.chmod(0o644)
        wait_for(lambda: "secret.txt" in archived(home), what="the file once readable")
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 0
        err.close()
    text = log.read_text()
    assert [line.split(" WARNING ")[1] for line in text.splitlines() if " WARNING " in line] == [
        "ussd.inbox: store: attempt to write a readonly database; files wait in the inbox and are retried",
        "ussd.inbox: secret.txt: Permission denied; left in the inbox, retried every sweep",
    ]
    assert text.count("fault cleared") == 2
    assert "Traceback" not in (tmp_path / "watch-stderr.txt").read_text()
    with Receiver(str(home.db)) as r:
        assert r.per_source()["watch"]["APPLIED"] + r.per_source().get("sweep", {}).get("APPLIED", 0) == 10


def test_a_watch_process_whose_files_cannot_grow_waits_and_resumes_without_counting_twice(home, tmp_path):
    """RLIMIT_FSIZE in the watcher: every write past 1 MB fails (EFBIG), the store's, the log's and
    the archive's alike. Lifted from outside with prlimit, the watcher carries on by itself."""
    import resource

    home.config.write_text("[inbox]\nsweep_interval = 0.1\nsettle_time = 0.1\nbatch_lines = 500\n")
    Receiver(str(home.db)).close()
    limit = 1024 * 1024

    def small_files():
        _soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))

    proc, err = _watch(home, tmp_path, small_files)
    lines = frame_lines("big", 20000)
    try:
        drop(home, "big.txt", text_of(lines))
        wait_for(lambda: "WARNING ussd.inbox: store: disk I/O error" in (tmp_path / "watch-stderr.txt").read_text(),
                 timeout=60, what="the write failure")
        assert proc.poll() is None  # still running
        row = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True).execute(
            "SELECT state, line FROM inbox_files").fetchone()
        assert row is None or (row[0] == "claimed" and row[1] < 20000)
        assert claimed(home) == ["big.txt"]
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        wait_for(lambda: archived(home) == ["big.txt"], timeout=60, what="the file finished after the limit went")
    finally:
        proc.terminate()
        code = proc.wait(timeout=60)
        err.close()
    assert code == 0
    stderr = (tmp_path / "watch-stderr.txt").read_text()
    assert "Traceback" not in stderr and "fault cleared" in stderr
    with Receiver(str(home.db)) as r:
        assert r.per_source() == {"watch": {"APPLIED": 20000}}
        assert r.db.execute_sql("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_watch_that_cannot_open_its_store_exits_2_with_one_line(home, capsys):
    home.db.mkdir()  # not a database at all
    assert main(["watch", "--home", str(home.root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ussd-console: error: {home.db} is not a file, so not a store; it was left as it is"]
    assert home.db.is_dir()
