"""Crash harness (R8): SIGKILL a real ``ussd-console watch`` at random instants.

A large inbox (plain, CSV and JSON-lines files with re-sends, re-ranks, conflicts,
bad trailers, garbage and a few unreadable files) is built twice from one seed.
One copy is taken in by a watcher that runs undisturbed (the clean run); the
other by a watcher that is killed with SIGKILL at random instants and restarted
each time, then left to finish. Both stores and both homes are then compared:
ledger, quarantine queue, rejects, counters and totals, per-file progress,
dedup witnesses, the live feed, the archive and the rejected folder. Nothing
may differ but timestamps, row ids and claim tokens.

Frames re-read after a crash must not be counted again: a file's progress
commits in the same transaction as its frames, so every counter, not just the
ledger, must equal the clean run's.

    python -m tests.crash_harness --kills 200 --frames 50000    # make crashtest
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from core.rules.cksum import trailer
from tests.crash_compare import differences, frame_counts, integrity
from tests.support.inbox_helpers import Holds
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
CONFIG = "[inbox]\nbatch_lines = 100\nsweep_interval = 0.5\nsettle_time = 0.2\n"
SITES = ["Kakuma1", "Kakuma2", "Dadaab", "Ifo2", "Hagadera", "Nyarugu", "Mahama", "Kalobeyi"]
NEEDS = ["MED", "SHE", "WAT", "FOO", "PRO", "EDU"]


def _frame(seq: int, site: str, need: str, headcount: int, pri: int) -> str:
    body = f"H1|{seq}|{site}|{need}|{headcount}|{pri}"
    return f"{body}|#{trailer(body)}"


# -- the inbox ---------------------------------------------------------------------------


@dataclass
class Corpus:
    files: int = 0
    frames: int = 0  # lines that carry a frame (good or bad) or garbage
    kinds: Counter = field(default_factory=Counter)


def build_inbox(folder: Path, frames: int, seed: int) -> Corpus:
    """Gateway sessions until ``frames`` lines are written; names sort in arrival order."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    corpus = Corpus()
    records: list[tuple[int, int, tuple]] = []  # (record, seq, payload) already sent once
    next_record = 0
    past = time.time() - 3600  # backdated: every file is settled when the watcher starts
    while corpus.frames < frames:
        n = corpus.files
        site = rng.choice(SITES)
        if n % 97 == 13:
            data, ext = b"\x00\x01\x02 binary from a broken modem \xff\xfe" * rng.randint(1, 40), "txt"
            corpus.kinds["unreadable file"] += 1
        elif n % 89 == 7:
            # One line that is not UTF-8: that line is a reject, the frame before it is taken in.
            data, ext = ("r1-1 " + _frame(1, site, "MED", 3, 40) + "\n").encode("latin-1") + b"caf\xe9\n", "txt"
            corpus.kinds["one bad line"] += 1
            corpus.frames += 2
        else:
            lines = []
            for _ in range(rng.randint(20, 600)):
                roll = rng.random()
                if roll < 0.55 or not records:
                    rec, seq = next_record, rng.randint(1, 9)
                    next_record += 1
                    payload = (site, rng.choice(NEEDS), rng.randint(1, 60), rng.randint(1, 999))
                    records.append((rec, seq, payload))
                    lines.append((f"r{rec}-{seq}", _frame(seq, *payload)))
                    corpus.kinds["new"] += 1
                    continue
                rec, seq, payload = rng.choice(records)
                if roll < 0.80:
                    lines.append((f"r{rec}-{seq}", _frame(seq, *payload)))
                    corpus.kinds["re-send"] += 1
                elif roll < 0.86:
                    seq2 = seq % 9 + 1
                    lines.append((f"r{rec}-{seq2}", _frame(seq2, *payload)))
                    corpus.kinds["re-rank"] += 1
                elif roll < 0.91:
                    s, need, hc, pri = payload
                    lines.append((f"r{rec}-{seq}", _frame(seq, s, need, hc + rng.randint(1, 5), pri)))
                    corpus.kinds["conflict"] += 1
                elif roll < 0.95:
                    good = _frame(seq, *payload)
                    lines.append((f"r{rec}-{seq}", good[:-2] + f"{(int(good[-2:], 16) + 1) % 256:02x}"))
                    corpus.kinds["bad trailer"] += 1
                elif roll < 0.97:
                    good = _frame(seq, *payload)
                    lines.append((f"r{rec}-{seq}", good[:-2] + good[-2:].upper()))
                    corpus.kinds["upper-case trailer"] += 1
                else:
                    lines.append((f"junk{rng.randint(0, 99)}", "H1|garbage|" + "x" * rng.randint(0, 30)))
                    corpus.kinds["garbage"] += 1
            corpus.frames += len(lines)
            data, ext = _render(lines, rng)
        name = f"{n:05d}-{site}.{ext}" if ext != "csv" else f"{n:05d}-{site}-export.csv"
        path = folder / name
        path.write_bytes(data)
        os.utime(path, (past, past))
        corpus.files += 1
    return corpus


def _render(lines: list[tuple[str, str]], rng: random.Random) -> tuple[bytes, str]:
    kind = rng.random()
    if kind < 0.15:  # a gateway CSV export with a phone column, BOM and CRLF
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(["id", "sender", "received", "message"])
        for i, (fid, text) in enumerate(lines):
            writer.writerow([1000 + i, f"+2547{rng.randint(10**7, 10**8 - 1)}", "2024-05-01 10:00", f"{fid} {text}"])
        return ("\ufeff" + out.getvalue()).encode("utf-8"), "csv"
    if kind < 0.30:
        body = "".join(json.dumps({"frame_id": fid, "frame": text, "msisdn": "+254700000000"}) + "\n"
                       for fid, text in lines)
        return body.encode(), "jsonl"
    sep = rng.choice([" ", "\t", ","])
    end = "\r\n" if rng.random() < 0.2 else "\n"
    return "".join(f"{fid}{sep}{text}{end}" for fid, text in lines).encode(), "txt"


# -- running the watcher -------------------------------------------------------------------


def make_home(root: Path, inbox_source: Path) -> Path:
    home = root
    (home / "logs").mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(CONFIG)
    shutil.copytree(inbox_source, home / "inbox")  # copytree keeps the backdated mtimes
    return home


def pending_files(home: Path) -> int:
    """Files the watcher still has to finish: in the inbox or claimed."""
    count = 0
    for folder in (home / "inbox", home / "inbox" / ".claimed"):
        try:
            with os.scandir(folder) as it:
                count += sum(1 for e in it if not e.name.startswith(".") and not e.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            pass
    return count


def claimed_files(home: Path) -> int:
    try:
        with os.scandir(home / "inbox" / ".claimed") as it:
            return sum(1 for e in it if not e.name.startswith("."))
    except FileNotFoundError:
        return 0


class Watch:
    """One ``ussd-console watch`` process, its stderr appended to a file."""

    def __init__(self, home: Path, stderr_path: Path, env: dict[str, str] | None = None):
        self.home = home
        self.log = home / "logs" / "receiver.log"
        self.log_from = self.log.stat().st_size if self.log.exists() else 0
        self.started = time.monotonic()
        self._err = open(stderr_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "console.cli", "watch", "--home", str(home)],
            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._err,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        )

    def watching(self) -> bool:
        """The service is up: the log line written after ``InboxService.start``."""
        try:
            with open(self.log, "rb") as fh:
                fh.seek(self.log_from)
                return b"INFO ussd.watch: watching " in fh.read()
        except FileNotFoundError:
            return False

    def wait_watching(self, timeout: float = 60.0) -> bool:
        """True once the watcher is up; False if it exited first or did not come up in time."""
        try:
            wait_for(lambda: self.watching() or self.proc.poll() is not None, timeout=timeout,
                     what="the watcher to start")
        except AssertionError:
            return False
        return self.watching()

    def kill(self) -> bool:
        """SIGKILL; True if it was still running (a kill survived), False if it had exited."""
        alive = self.proc.poll() is None
        if alive:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._err.close()
        return alive

    def stop(self, timeout: float = 60.0) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._err.close()
        return code


def run_until_empty(home: Path, stderr_path: Path, timeout: float) -> tuple[float, int]:
    """Start a watcher, wait until the inbox is empty, stop it. (seconds of work, exit code)."""
    watch = Watch(home, stderr_path)
    if not watch.wait_watching():
        return 0.0, watch.stop()
    began = time.monotonic()
    deadline = began + timeout
    while pending_files(home) and time.monotonic() < deadline and watch.proc.poll() is None:
        time.sleep(0.02)
    took = time.monotonic() - began
    return took, watch.stop()


@dataclass
class KillRun:
    kills: int = 0
    during_startup: int = 0
    exited_early: int = 0  # a watcher that was gone before its kill: it must never happen
    restarts: int = 0
    mid_file: int = 0  # kills that left a file claimed, part read
    at_commit: int = 0  # kills of a watcher held just after committing a batch


def run_with_kills(home: Path, stderr_path: Path, kills: int, rng: random.Random, timeout: float,
                   holds: Holds) -> KillRun:
    """Kill ``kills`` watchers: in start-up, at a commit, or at a random instant just after one.

    Every watcher runs with the hold-after-commit hook, so it waits after each batch it commits
    until the harness lets it go: it cannot run away from its kill on a fast machine, and a
    kill at a held commit lands with a file claimed and part read on any machine. Between
    commits the kill instant is random (reading, ingesting, archiving, claiming the next file).
    """
    run = KillRun()
    deadline = time.monotonic() + timeout
    while run.kills < kills and pending_files(home) and time.monotonic() < deadline:
        watch = Watch(home, stderr_path, env=holds.env)
        pid = watch.proc.pid
        run.restarts += 1
        held = False

        def working() -> bool:
            return watch.proc.poll() is None and pending_files(home) > 0

        if rng.random() < 0.1:
            # Anywhere in start-up: imports, opening and migrating the store, starting threads.
            time.sleep(rng.uniform(0.0, 0.8))
            run.during_startup += 1
        else:
            marker = holds.next(pid, alive=working, timeout=timeout)
            for _ in range(rng.randint(0, 1)):  # a few commits more
                if marker is None:
                    break
                holds.release(pid)
                marker = holds.next(pid, alive=working, timeout=timeout)
            if marker is not None and rng.random() < 0.5:
                held = True
            else:
                holds.release(pid)
                time.sleep(rng.uniform(0.0, 0.05))  # anywhere up to the next commit, where it waits again
        if watch.kill():
            run.kills += 1
            run.mid_file += claimed_files(home) > 0
            run.at_commit += held
        else:
            run.exited_early += 1
        holds.release(pid)  # the dead watcher's markers
    return run


# -- the whole run -------------------------------------------------------------------------


@dataclass
class Result:
    frames: int
    files: int
    kills: int
    kills_in_startup: int
    kills_mid_file: int
    kills_at_commit: int
    restarts: int
    exited_early: int
    lost: int
    double_counted: int
    integrity: str
    differences: list[str]
    tracebacks: int
    seconds: float
    clean_seconds: float
    outcomes: dict
    kinds: dict

    @property
    def ok(self) -> bool:
        return not self.differences


def run(workdir: Path, frames: int, kills: int, seed: int = 1, timeout: float = 900.0) -> Result:
    began = time.monotonic()
    rng = random.Random(seed)
    source = workdir / "source-inbox"
    corpus = build_inbox(source, frames, seed)
    clean_home = make_home(workdir / "clean", source)
    crash_home = make_home(workdir / "crashed", source)
    found: list[str] = []

    clean_seconds, code = run_until_empty(clean_home, workdir / "clean-stderr.txt", timeout)
    if code != 0 or pending_files(clean_home):
        found.append(f"the clean run did not finish (exit {code}, {pending_files(clean_home)} files left)")

    killed = run_with_kills(crash_home, workdir / "crash-stderr.txt", kills, rng, timeout, Holds(workdir / "holds"))
    _took, code = run_until_empty(crash_home, workdir / "crash-stderr.txt", timeout)
    if code != 0 or pending_files(crash_home):
        found.append(f"the last run after the kills did not finish (exit {code}, {pending_files(crash_home)} files left)")
    if killed.exited_early:
        found.append(f"{killed.exited_early} watchers exited by themselves before their kill")

    check = integrity(crash_home / "receiver.db")
    if check != "ok":
        found.append(f"PRAGMA integrity_check: {check}")
    found.extend(differences(clean_home, crash_home))
    finished = (sum(1 for p in (crash_home / "processed").rglob("*") if p.is_file() and not p.name.startswith("."))
                + sum(1 for p in (crash_home / "rejected").iterdir() if not p.name.endswith(".reason")))
    if finished != corpus.files:
        found.append(f"{corpus.files} inbox files, but {finished} ended in processed/ or rejected/")
    tracebacks = 0
    for name in ("clean-stderr.txt", "crash-stderr.txt"):
        path = workdir / name
        if path.exists():
            tracebacks += path.read_bytes().count(b"Traceback")
    if tracebacks:
        found.append(f"{tracebacks} tracebacks on the watchers' stderr")

    want, got = frame_counts(clean_home), frame_counts(crash_home)
    return Result(
        frames=corpus.frames, files=corpus.files, kills=killed.kills, kills_in_startup=killed.during_startup,
        kills_mid_file=killed.mid_file, kills_at_commit=killed.at_commit,
        restarts=killed.restarts, exited_early=killed.exited_early,
        lost=sum((want - got).values()), double_counted=sum((got - want).values()),
        integrity=check, differences=found, tracebacks=tracebacks,
        seconds=time.monotonic() - began, clean_seconds=clean_seconds,
        outcomes=dict(sorted(got.items())), kinds=dict(sorted(corpus.kinds.items())),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.crash_harness", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=200, help="SIGKILLs to survive (default 200)")
    parser.add_argument("--frames", type=int, default=50_000, help="frame lines in the inbox (default 50000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary folder)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds allowed per phase")
    args = parser.parse_args(argv)
    if args.keep:
        workdir = Path(args.keep)
        if workdir.exists():
            shutil.rmtree(workdir)
        workdir.mkdir(parents=True)
        result = run(workdir, args.frames, args.kills, args.seed, args.timeout)
    else:
        with tempfile.TemporaryDirectory(prefix="ussd-crash-") as tmp:
            result = run(Path(tmp), args.frames, args.kills, args.seed, args.timeout)
    print(f"inbox: {result.frames} frame lines in {result.files} files ({', '.join(f'{k} {v}' for k, v in result.kinds.items())})")
    print(f"clean run: {result.clean_seconds:.1f} s of work")
    print(f"kills survived: {result.kills} SIGKILLs ({result.kills_in_startup} during start-up, "
          f"{result.kills_mid_file} leaving a file claimed, {result.kills_at_commit} just after a commit), "
          f"{result.restarts + 1} watcher starts")
    print(f"outcomes: {', '.join(f'{k} {v}' for k, v in result.outcomes.items())}")
    print(f"frames lost: {result.lost}; frames double-counted: {result.double_counted}; "
          f"integrity_check: {result.integrity}; tracebacks: {result.tracebacks}")
    if result.differences:
        print(f"DIFFERENCES from the clean run ({len(result.differences)}):")
        for line in result.differences:
            print(f"  - {line}")
    else:
        print("differences from the clean run: none")
    print(f"took {result.seconds:.0f} s")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
