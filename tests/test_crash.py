"""R8 across SIGKILL: a killed ingest loses nothing committed and never applies twice."""

import json
import os
import random
import signal
import subprocess
import sys

from core import Receiver
from tests.support.helpers import ROOT, bad_trailer, frame

INGEST = """
import json, sys
from core import Receiver
items = [tuple(x) for x in json.load(open(sys.argv[2]))]
with Receiver(sys.argv[1]) as r:
    for start in range(0, len(items), 250):
        r.ingest_many(items[start:start + 250], now=1_700_000_000, source="cli")
        print(start, flush=True)
        sys.stdin.readline()  # the test lets each next batch go, so it knows the child is still at work
"""


def session_items(n_cases: int, seed: int):
    rng = random.Random(seed)
    items = []
    for i in range(n_cases):
        text = frame(1, f"S{i % 9}", "MED", 1 + i % 50, i % 100)
        items.append((f"c{i}-1", text))
        if rng.random() < 0.3:
            items.append((f"c{i}-1", text))  # re-send
        if rng.random() < 0.05:
            items.append((f"c{i}-1", frame(1, f"S{i % 9}", "MED", 99, i % 100)))  # conflict
        if rng.random() < 0.05:
            items.append((f"c{i}-1", bad_trailer(text)))
    rng.shuffle(items)
    return items


def snapshot(r: Receiver):
    cases = sorted((c.case_key, c.frame_text) for c in r.cases(limit=10**6))
    quarantine = sorted((q.frame_id, q.frame_text) for q in r.quarantine(limit=10**6))
    return cases, quarantine, r.headcount_total()


def test_sigkill_then_full_resend_applies_each_case_once(tmp_path):
    items = session_items(6000, seed=5)
    src = tmp_path / "items.json"
    src.write_text(json.dumps(items))
    db = str(tmp_path / "r.db")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rng = random.Random(9)
    for attempt in range(4):
        proc = subprocess.Popen([sys.executable, "-c", INGEST, db, str(src)], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline()  # one batch committed
        for _ in range(rng.randint(0, 3)):  # a few more, then the kill lands inside the next commit or after it
            proc.stdin.write("go\n")
            proc.stdin.flush()
            assert proc.stdout.readline()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.poll() is None  # it cannot finish: 24 batches, at most 5 let go per run
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
    # After the crashes, the sender re-sends everything once more.
    with Receiver(db) as r:
        r.ingest_many(items, now=1_700_000_100, source="cli")
        r.ingest_many(items, now=1_700_000_200, source="cli")
        got = snapshot(r)
        assert r.db.execute_sql("PRAGMA integrity_check").fetchone()[0] == "ok"
    with Receiver(str(tmp_path / "clean.db")) as clean:
        clean.ingest_many(items, now=1_700_000_000, source="cli")
        want = snapshot(clean)
    assert got == want
    assert len(got[0]) == 6000  # every case, once
