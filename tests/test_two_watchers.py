"""Two receiver processes on one home: two ``ussd-console watch`` whose observers and
sweeps race for the same files. Every file is claimed once, every frame is counted once, every
case is applied once, and no version of a case is lost."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter

from core import Receiver
from tests.support.helpers import ROOT, bad_trailer, frame
from tests.support.inbox_helpers import drop, wait_for

FILES = 120


def build_files(seed: int) -> tuple[dict[str, str], dict[str, set], int]:
    """Files of a few sessions each, with re-sends, re-ranks, conflicts and bad trailers across files.

    Returns the files, every payload version sent per case, and the number of frame lines.
    """
    rng = random.Random(seed)
    files: dict[str, str] = {}
    versions: dict[str, set] = {}
    sent: list[tuple[int, int, tuple]] = []
    lines_total = 0
    for n in range(FILES):
        lines = []
        for _ in range(rng.randint(10, 40)):
            roll = rng.random()
            if roll < 0.5 or not sent:
                rec, seq = len(sent), rng.randint(1, 5)
                payload = (f"S{rec % 7}", "WAT", rng.randint(1, 50), rng.randint(1, 99))
                sent.append((rec, seq, payload))
            else:
                rec, seq, payload = rng.choice(sent)
                if roll < 0.75:
                    pass  # a re-send
                elif roll < 0.85:
                    seq = seq % 5 + 1  # a re-rank
                elif roll < 0.92:
                    payload = (payload[0], payload[1], payload[2] + 100, payload[3])  # a correction: a conflict
                else:
                    lines.append(f"r{rec}-{seq} {bad_trailer(frame(seq, *payload))}")
                    continue
            versions.setdefault(f"rec:r{rec}", set()).add(payload)
            lines.append(f"r{rec}-{seq} {frame(seq, *payload)}")
        lines_total += len(lines)
        files[f"f{n:03d}.txt"] = "".join(line + "\n" for line in lines)
    return files, versions, lines_total


def start_watch(home, err_path) -> subprocess.Popen:
    err = open(err_path, "w")
    proc = subprocess.Popen([sys.executable, "-m", "console.cli", "watch", "--home", str(home.root)], cwd=ROOT,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    err.close()  # the child holds its own copy
    return proc


def test_two_watchers_on_one_home_claim_every_file_once_and_count_every_frame_once(home, tmp_path):
    home.config.write_text("[inbox]\nsweep_interval = 0.05\nsettle_time = 0.1\nbatch_lines = 10\n")
    Receiver(str(home.db)).close()
    home.inbox.mkdir()
    files, versions, lines_total = build_files(seed=11)
    names = sorted(files)
    early, late = names[: FILES // 2], names[FILES // 2 :]
    for name in early:  # waiting before either starts: both start-up sweeps race for them
        drop(home, name, files[name], age=30)
    procs = [start_watch(home, tmp_path / f"stderr-{i}.txt") for i in range(2)]
    log = home.logs / "receiver.log"
    try:
        wait_for(lambda: log.exists() and log.read_text().count("INFO ussd.watch: watching ") == 2, timeout=60,
                 what="both watchers to start")
        for name in late:  # dropped while both run: both observers and both sweeps race
            drop(home, name, files[name])
            time.sleep(0.005)

        def finished():
            done = [p for p in home.processed.rglob("*") if p.is_file()]
            left = [p for p in home.inbox.iterdir() if p.name != ".claimed"] + list((home.inbox / ".claimed").iterdir())
            return len(done) == FILES and not left

        wait_for(finished, timeout=60, what="every file archived")
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        codes = [proc.wait(timeout=60) for proc in procs]
    assert codes == [0, 0]

    archived = sorted(p.name for p in home.processed.rglob("*") if p.is_file())
    assert archived == names  # each once: no second copy, nothing hidden left behind
    assert not list(home.rejected.iterdir())
    text = log.read_text()
    won = Counter(line.rsplit(": ", 1)[1] for line in text.splitlines() if " claim won by " in line)
    assert won == Counter(names)  # every file claimed exactly once, across both processes
    assert "Traceback" not in text
    for i in range(2):
        assert "Traceback" not in (tmp_path / f"stderr-{i}.txt").read_text()

    con = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT name, state, line FROM inbox_files").fetchall()
        assert sorted(name for name, _s, _l in rows) == names and {s for _n, s, _l in rows} == {"done"}
        assert sum(n for _n, _s, n in rows) == lines_total
        assert con.execute("SELECT SUM(files) FROM inbox_path_files").fetchone()[0] == FILES
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()
    with Receiver(str(home.db)) as r:
        totals = r.totals()
        assert totals.frames == lines_total  # no frame counted twice, none missed
        assert totals.cases == totals.applied == r.count_cases() == len(versions)  # each case applied once
        held: dict[str, set] = {}
        for c in r.cases(limit=10**6):
            held.setdefault(c.case_key, set()).add((c.site, c.need, c.headcount, c.pri))
        for q in r.quarantine(limit=10**6):
            site, need, hc, pri = q.frame_text.split("|")[2:6]
            held[q.case_key].add((site, need, int(hc), int(pri)))
        assert held == versions  # no version of any case lost
        pairs = [(q.frame_id, q.frame_text) for q in r.quarantine(limit=10**6)]
        assert len(pairs) == len(set(pairs))
        by_path = r.per_source()
        assert set(by_path) <= {"watch", "sweep"}
        assert sum(sum(c.values()) for c in by_path.values()) == lines_total
