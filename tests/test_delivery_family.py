"""The one end-to-end test of the whole delivery family (docs/rules.md, delivery) on one home, every path at once.

Five deliverers share a home: a real ``ussd-console watch --listen`` process (its observer, its
sweep and a gateway posting over HTTP), ``ussd-console ingest`` from the command line, and the
console's own inbox service (the Textual app builds and runs it, observer and sweep). Files overlap (cases re-sent across
files), some are re-sent whole, one under a name already archived, and a few lines are bad.

Nothing here depends on who is faster. Each deliverer first gets files only it can take
(the watch process is held with SIGSTOP while the command line and the console work alone,
and the console's sweep is paused while its observer works), then all of
them race for the same backdated files. Whoever wins a file, the store must hold exactly
once what the files say, and each path must be credited exactly the frames of the files
whose claims it won, by both the per-path counters and the per-file claim records.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import re
import json
import logging
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

from console.app import ConsoleApp, inbox_service
from core import Receiver
from core.config import InboxConfig
from core.rules.formats import read_items
from core.inbox import file_counts
from tests.support.console_support import HOME_LABEL, run_async, until
from tests.support.helpers import ROOT, bad_trailer
from tests.support.inbox_helpers import drop, frame_lines, text_of, wait_for
from tests.support.gateway_support import add_gateway, post
from tests.support.signing import add_operators

WATCH_CONFIG = "[inbox]\nsweep_interval = 0.05\nsettle_time = 0.1\n"
CONSOLE_CONFIG = InboxConfig(sweep_interval=0.05, settle_time=0.1)
OLD = 120  # seconds a backdated file is old: settled for every sweep


def overlapping(name: str, first: int, count: int, bad: int = 0) -> tuple[str, str]:
    """A gateway file of cases ``first .. first+count-1`` (shared with its neighbours) and ``bad``
    lines with a broken trailer."""
    lines = frame_lines("e", count, start=first)
    for n in range(bad):
        fid, text = lines[n].split(" ")
        lines.append(f"{fid} {bad_trailer(text)}")
    return name, text_of(lines)


def stopped(pid: int) -> bool:
    """Every thread of the process is stopped (SIGSTOP has landed, not just been sent)."""
    tasks = Path(f"/proc/{pid}/task")
    return all((t / "stat").read_text().rsplit(")", 1)[1].split()[0] in "tT" for t in tasks.iterdir())


def archived_names(home) -> Counter:
    return Counter(p.name for p in home.processed.rglob("*") if p.is_file())


def claim_records(lines) -> Counter:
    """(inbox name, path) from ``claim won by PATH: NAME`` log lines."""
    out: Counter = Counter()
    for line in lines:
        if "claim won by " in line:
            path, name = line.split("claim won by ", 1)[1].split(": ", 1)
            out[(name, path)] += 1
    return out


def per_winning_path(records: Counter) -> Counter:
    out: Counter = Counter()
    for (_name, path), n in records.items():
        out[path] += n
    return out


def store_rows(db: Path) -> list[tuple[str, str, str, int]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)
    try:
        return con.execute("SELECT name, source, state, frames FROM inbox_files").fetchall()
    finally:
        con.close()


@run_async
async def test_watch_sweep_cli_and_console_together_deliver_every_frame_once_to_the_path_that_won_it(
        home, tmp_path, caplog, capsys):
    caplog.set_level(logging.INFO, logger="ussd.inbox")
    add_operators(home, tmp_path, "alice")
    gate = add_gateway(home, tmp_path, capsys, "gate", "generic")  # the HTTP path: gw_gate
    home.config.write_text(WATCH_CONFIG)
    home.inbox.mkdir(parents=True, exist_ok=True)
    dropped: list[tuple[str, str]] = []  # every file put in the inbox, in order
    outside: list[str] = []  # texts the command line reads from outside the inbox

    def put(files, age: float = 0.0) -> None:
        for name, text in files:
            drop(home, name, text, age=age)
            dropped.append((name, text))

    def all_archived() -> bool:
        """Every dropped file archived (a re-used name under a new one) and nothing left behind."""
        left = [p for p in home.inbox.iterdir() if p.name != ".claimed"] + list((home.inbox / ".claimed").iterdir())
        return sum(archived_names(home).values()) == len(dropped) and not left

    def ingest(*paths: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "console.cli", "--home", str(home.root), "ingest",
                                 *map(str, paths)], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)

    def ingested(proc: subprocess.Popen) -> None:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and "Traceback" not in err, err

    # 1. The watch process alone: whatever it takes is its own.
    watch_err = tmp_path / "watch-stderr.txt"
    with open(watch_err, "w") as err:
        watch = subprocess.Popen([sys.executable, "-m", "console.cli", "watch", "--home", str(home.root),
                                  "--listen", "127.0.0.1:0"], cwd=ROOT,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    log = home.logs / "receiver.log"
    try:
        # Started, and its first eviction done: idle, it holds no store lock when it is stopped below.
        wait_for(lambda: watch.poll() is not None or (log.exists() and "scheduled eviction run" in log.read_text()),
                 what="watch to start")
        assert watch.poll() is None, watch_err.read_text()
        port = int(re.findall(r"listening on http://127\.0\.0\.1:(\d+)/in/", log.read_text())[-1])
        by_watch_process = [overlapping("w0.txt", 0, 12), overlapping("w1.txt", 8, 12, bad=1),
                            overlapping("w2.txt", 0, 12)]  # w2 is w0 re-sent whole
        put(by_watch_process)
        wait_for(all_archived, what="the watch process's files archived")

        # 2. The watch process held still: the command line alone, then the console alone.
        watch.send_signal(signal.SIGSTOP)
        wait_for(lambda: stopped(watch.pid), what="the watch process stopped")
        by_cli = [overlapping("k0.txt", 16, 10), overlapping("k1.txt", 20, 10, bad=2)]
        put(by_cli)
        beside = tmp_path / "export.txt"
        outside.append(overlapping("export.txt", 24, 14, bad=1)[1])
        beside.write_text(outside[-1])
        ingested(ingest(home.inbox / "k0.txt", home.inbox / "k1.txt", beside))
        assert all_archived()

        by_console_sweep = [overlapping("s0.txt", 30, 10), overlapping("s1.txt", 36, 10)]
        put(by_console_sweep, age=OLD)  # waiting before the console opens: its first sweep takes them
        app = ConsoleApp(home, service_factory=functools.partial(inbox_service, config=CONSOLE_CONFIG),
                         evict_every=None, home_label=HOME_LABEL)
        async with app.run_test(size=(100, 30)):
            await until(lambda: app.service is not None and app.service.health()["observer"] == "running")
            await asyncio.to_thread(wait_for, all_archived, what="the console's sweep to take its files")
            by_console_observer = [overlapping("o0.txt", 40, 10, bad=1), overlapping("o1.txt", 44, 10)]
            with app.service.sweep_paused():  # only the console's observer may take these
                put(by_console_observer)
                await asyncio.to_thread(wait_for, all_archived, what="the console's observer to take its files")

            # 3. Everyone at once: both observers and both sweeps race for backdated files while
            # the command line ingests an overlapping export beside them.
            watch.send_signal(signal.SIGCONT)
            raced = [overlapping(f"r{n:02d}.txt", 4 * n, 10, bad=n % 3 == 0) for n in range(16)]
            raced += [overlapping("w0.txt", 0, 12), overlapping("k0.txt", 16, 10)]  # names already archived
            beside2 = tmp_path / "export2.txt"
            outside.append(overlapping("export2.txt", 10, 40)[1])
            beside2.write_text(outside[-1])
            cli = ingest(beside2)
            # The gateway posts overlapping frames (and a bad one) one per post, four at a time.
            posted = frame_lines("e", 30, start=26) + [f"e3 {bad_trailer(frame_lines('e', 1, start=3)[0].split()[1])}"]
            pool = concurrent.futures.ThreadPoolExecutor(4)
            answers = [pool.submit(post, f"http://127.0.0.1:{port}", gate, json.dumps({"text": line}).encode(),
                                   {"Content-Type": "application/json"}) for line in posted]
            put(raced, age=OLD)
            assert [a.result(timeout=120)[0] for a in answers] == [200] * len(posted)  # each after its commit
            pool.shutdown()
            await asyncio.to_thread(ingested, cli)
            await asyncio.to_thread(wait_for, all_archived, what="every raced file archived")
            console_won = dict(app.service.health()["claims_won"])
            console_records = claim_records(r.getMessage() for r in caplog.records if r.name == "ussd.inbox")
    finally:
        if watch.poll() is None:
            watch.send_signal(signal.SIGCONT)
            watch.send_signal(signal.SIGTERM)
        code = watch.wait(timeout=60)
    assert code == 0
    assert "Traceback" not in watch_err.read_text()
    watch_records = claim_records(log.read_text().splitlines())
    assert "Traceback" not in log.read_text()

    # Exactly once: the store holds what one clean pass over every file would.
    reference = Receiver(":memory:")
    for name, text in dropped + [("outside", t) for t in outside] + [("posted.txt", text_of(posted))]:
        items, _fmt = read_items(name, text.encode())
        reference.ingest_many([(fid, t, name, line) for fid, t, line in items])
    with Receiver(str(home.db)) as r:
        totals, per_path, files_per_path = r.totals(), r.per_source(), file_counts(r)
        assert r.db.execute_sql("PRAGMA integrity_check").fetchone()[0] == "ok"
    want = reference.totals()
    reference.close()
    keys = ("cases", "headcount_total", "applied", "duplicates", "rejects", "frames", "seen_frames")
    assert {k: getattr(totals, k) for k in keys} == {k: getattr(want, k) for k in keys}
    assert totals.cases == 70 and totals.conflicts == 0  # cases e0 .. e69, each once

    # One claim record per file, naming the path that won it, and the store agrees.
    rows = store_rows(home.db)
    assert sorted(name for name, *_ in rows) == sorted(name for name, _text in dropped)
    assert {state for _n, _s, state, _f in rows} == {"done"}
    # Every line of every file counted once, on the row of the claim that read it.
    assert Counter((name, frames) for name, _s, _st, frames in rows) == Counter(
        (name, text.count("\n")) for name, text in dropped)
    cli_records = Counter((name, "cli") for name, _text in by_cli)
    assert watch_records + console_records + cli_records == Counter((name, source) for name, source, *_ in rows)
    assert files_per_path == dict(Counter(source for _n, source, *_ in rows))
    assert console_won == dict(per_winning_path(console_records))

    # Each path is credited with exactly the frames of the files whose claims it won.
    outside_frames = sum(t.count("\n") for t in outside)
    for path in ("watch", "sweep", "cli"):
        won_frames = sum(frames for _n, source, _s, frames in rows if source == path)
        assert sum(per_path.get(path, {}).values()) == won_frames + (outside_frames if path == "cli" else 0), path
    assert sum(per_path["gw_gate"].values()) == len(posted)  # the gateway: exactly what it posted
    assert set(per_path) <= {"watch", "sweep", "cli", "gw_gate"}

    # Who took what where the race was arranged, not guessed.
    def winners(files, records) -> set:
        names = {name for name, _text in files}
        return {(name, path) for (name, path) in records if name in names}

    assert {n for n, _p in winners(by_watch_process, watch_records)} == {"w0.txt", "w1.txt", "w2.txt"}
    assert winners(by_console_sweep, console_records) == {("s0.txt", "sweep"), ("s1.txt", "sweep")}
    assert winners(by_console_observer, console_records) == {("o0.txt", "watch"), ("o1.txt", "watch")}
    raced_names = {name for name, _text in raced}
    taken_in_race = sum(c for (name, _p), c in (watch_records + console_records).items()
                        if name in raced_names and not name.startswith(("w0", "k0")))
    assert taken_in_race == 16  # every raced file won once, by one of the four
    status = json.loads(subprocess.run([sys.executable, "-m", "console.cli", "--home", str(home.root), "status",
                                        "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120).stdout)
    assert status["per_source"] == per_path and status["files_per_path"] == files_per_path
    assert status["gateways"]["gate"]["accepted"] == len(posted) and status["gateways"]["gate"]["refused"] == 0
