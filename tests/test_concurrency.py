"""Several receiver processes on one store at once: every case applied exactly once,
every conflict quarantined once, counters exact, the same ledger as one clean run."""

import json
import os
import random
import subprocess
import sys

from core import Receiver
from tests.support.helpers import ROOT, bad_trailer, frame
from tests.support.waiting import wait_for

WORKER = """
import json, sys
from core import Receiver
items = [tuple(x) for x in json.load(open(sys.argv[2]))]
with Receiver(sys.argv[1]) as r:
    for start in range(0, len(items), 100):
        r.ingest_many(items[start:start + 100], now=1_700_000_000, source=sys.argv[3])
"""


def gateway_feeds(n_cases: int, gateways: int, seed: int):
    """Overlapping feeds: every session is picked up by one to all gateways, in any order."""
    rng = random.Random(seed)
    feeds = [[] for _ in range(gateways)]
    for i in range(n_cases):
        seq = 1 + i % 3
        text = frame(seq, f"G{i % 7}", "WAT", 1 + i % 60, i % 100)
        copies = [(f"s{i}-{seq}", text)]
        if i % 10 == 0:
            copies.append((f"s{i}-{seq}", frame(seq, f"G{i % 7}", "WAT", 200, i % 100)))  # a conflict
        if i % 13 == 0:
            copies.append((f"s{i}-{seq + 3}", frame(seq + 3, f"G{i % 7}", "WAT", 1 + i % 60, i % 100)))  # re-rank
        if i % 17 == 0:
            copies.append((f"s{i}-{seq}", bad_trailer(text)))
        for g in rng.sample(range(gateways), rng.randint(1, gateways)):
            feeds[g].extend(copies)
    for feed in feeds:
        rng.shuffle(feed)
    return feeds


def ledger(r: Receiver):
    """Per case, every payload the store holds: the applied one and the quarantined ones.

    Which copy wins first-write-wins (and so which pack rank, and whether a
    re-rank is a duplicate or a conflict) depends on arrival order, so runs
    are compared on the payloads each case holds in all: none may be lost."""
    def payload(text):
        return tuple(text.split("|")[2:6])

    versions: dict[str, set] = {}
    for c in r.cases(limit=10**6):
        versions.setdefault(c.case_key, set()).add(payload(c.frame_text))
    quarantined = r.quarantine(limit=10**6)
    for q in quarantined:
        versions[q.case_key].add(payload(q.frame_text))
    pairs = [(q.frame_id, q.frame_text) for q in quarantined]
    assert len(pairs) == len(set(pairs))  # no conflict queued twice
    return versions, len(quarantined)


def test_four_receivers_at_once_equal_one_clean_run(new_store, tmp_path):
    feeds = gateway_feeds(1500, 4, seed=3)
    target = new_store()
    Receiver(target).close()  # schema in place before the race starts
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = []
    for g, feed in enumerate(feeds):
        path = tmp_path / f"feed{g}.json"
        path.write_text(json.dumps(feed))
        procs.append(subprocess.Popen([sys.executable, "-c", WORKER, target, str(path), f"gw{g}"], env=env,
                                      stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    with Receiver(target) as r:
        got = ledger(r)
        per_source = r.per_source()
        totals = r.totals()
    with Receiver(new_store()) as clean:
        for feed in feeds:
            clean.ingest_many(feed, now=1_700_000_000)
        want = ledger(clean)
    assert len(got[0]) == 1500 and got[0] == want[0]  # every case once, no version lost
    assert got[1] >= 150  # at least the 150 corrected copies wait for an operator
    for g, feed in enumerate(feeds):
        assert sum(per_source[f"gw{g}"].values()) == len(feed)  # exact per-path accounting
    assert totals.applied == 1500 and totals.cases == 1500


def test_four_watchers_on_overlapping_inboxes(new_store, tmp_path):
    """Four `ussd-console watch` processes, each with its own inbox, on one store."""
    import signal
    import time

    feeds = gateway_feeds(600, 4, seed=8)
    target = new_store()
    Receiver(target).close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    homes, procs = [], []
    for g in range(4):
        home = tmp_path / f"gw{g}"
        (home / "inbox").mkdir(parents=True)
        homes.append(home)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "console.cli", "--home", str(home), "--db", target, "watch",
             "--sweep-interval", "0.5", "--settle-time", "0.2"],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    n_files = 0
    for g, feed in enumerate(feeds):
        for k in range(0, len(feed), 60):  # many small files, renamed in like a gateway does
            part = homes[g] / "inbox" / f".f{k}.part"
            part.write_text("".join(f"{fid} {text}\n" for fid, text in feed[k:k + 60]))
            part.rename(homes[g] / "inbox" / f"f{k}.txt")
            n_files += 1
    archived = lambda: sum(len(list((h / "processed").rglob("*.txt"))) for h in homes)  # noqa: E731
    try:
        wait_for(lambda: archived() == n_files, timeout=120, interval=0.3, what="every file archived")
    except AssertionError:
        pass  # the watchers are stopped first, and the count below says how far they got
    done = archived()
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err[-2000:]
    assert done == n_files
    with Receiver(target) as r:
        got = ledger(r)
        totals = r.totals()
    with Receiver(new_store()) as clean:
        for feed in feeds:
            clean.ingest_many(feed, now=1_700_000_000)
        want = ledger(clean)
    assert len(got[0]) == 600 and got[0] == want[0]
    assert totals.applied == 600 and totals.frames == sum(len(f) for f in feeds)


def test_a_store_being_made_by_another_connection_is_waited_for_not_refused(tmp_path):
    """A new store is in rollback mode until its first connection turns it to WAL, and SQLite's
    busy handler does not wait for a journal-mode change: the second of two receivers starting on
    a new home (or the console's inbox beside its reader) got "database is locked" at once."""
    import sqlite3
    import threading

    path = tmp_path / "receiver.db"
    maker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    maker.execute("BEGIN IMMEDIATE")  # the other connection, mid-way through making the store
    opened = threading.Event()
    release = threading.Timer(0.5, lambda: (maker.execute("ROLLBACK"), opened.set()))
    release.start()
    try:
        with Receiver(str(path)) as r:
            assert opened.is_set()  # it waited for the other connection rather than failing
            assert r.db.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert r.ingest_many([("k-1", frame(1, "A", "MED", 1, 1))], now=1_700_000_000)[0].outcome == "APPLIED"
    finally:
        release.cancel()
        maker.close()
