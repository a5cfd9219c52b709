"""``make bench``: the figures of docs/rules.md#performance-targets, printed (never asserted in tests).

Each figure is measured in this run on this machine:
- batch ingest of a generated mixed file into a file-backed store, beside the bare
  keyed insert of the same rows (same durability) and the reference decision, measured
  alternately (A/B) and shown as medians, since the machine may be busy;
- the same ingest with 1,000,000 frames already stored (a copy of one filled store per round);
- how long a console read waits while 1,000,000 expired rows are evicted;
- drop-to-ledger latency through a watched inbox, the share of a burst of files the
  observer carries against the sweep, and console open time and memory, when those
  parts are present.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path

from core import Receiver
from core.rules.formats import plain_lines
from core.rules.retention import DAY
from core.store.backend import SQLITE_PRAGMAS
from tests.support.helpers import bad_trailer, frame

MIX = "45% first arrivals, 35% re-sends, 5% re-ranks, 5% conflicts, 5% bad trailers, 5% bad format"


def mixed_lines(n: int, prefix: str, seed: int = 1) -> list[str]:
    """``frame_id frame`` lines in the documented mix, shuffled like interleaved sessions."""
    rng = random.Random(seed)
    new = int(n * 0.45)
    lines, sent = [], []
    for i in range(new):
        seq = 1 + i % 3
        text = frame(seq, f"S{i % 97}", ("MED", "SHE", "WAT", "FOO")[i % 4], 1 + i % 40, i % 100)
        lines.append(f"{prefix}{i}-{seq} {text}")
        sent.append((i, seq))
    for _ in range(int(n * 0.35)):
        lines.append(lines[rng.randrange(new)])
    for _ in range(int(n * 0.05)):  # same record, new pack rank, same payload
        i, seq = sent[rng.randrange(new)]
        lines.append(f"{prefix}{i}-{seq + 3} " + frame(seq + 3, f"S{i % 97}", ("MED", "SHE", "WAT", "FOO")[i % 4], 1 + i % 40, i % 100))
    for _ in range(int(n * 0.05)):  # same id, corrected headcount
        i, seq = sent[rng.randrange(new)]
        lines.append(f"{prefix}{i}-{seq} " + frame(seq, f"S{i % 97}", ("MED", "SHE", "WAT", "FOO")[i % 4], 500 + i % 40, i % 100))
    for _ in range(int(n * 0.05)):
        lines.append(bad_trailer(lines[rng.randrange(new)]))
    while len(lines) < n:
        lines.append(f"{prefix}x{len(lines)}-1 H1|1|Kakuma1|MED|3")
    rng.shuffle(lines)
    return lines


def write_file(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n")


def ingest_file(r: Receiver, path: Path) -> tuple[float, int]:
    """Read, parse and ingest one file; seconds from open to last commit."""
    t = time.perf_counter()
    items = [(fid, text, path.name, line) for fid, text, line in plain_lines(path.read_text())]
    r.ingest_many(items, source="bench")
    return time.perf_counter() - t, len(items)


def raw_sqlite_rate(db: Path, path: Path) -> float:
    """The same rows, read and inserted as-is into a table keyed by frame id (a re-sent id is
    skipped: ``ON CONFLICT DO NOTHING``) with the store's pragmas, in one transaction: what the
    store itself allows, the ceiling the receiver's rate is measured against."""
    con = sqlite3.connect(db, isolation_level=None)
    for key, value in SQLITE_PRAGMAS.items():
        con.execute(f"PRAGMA {key} = {value}")
    con.execute("CREATE TABLE raw (frame_id TEXT PRIMARY KEY, frame_text TEXT, file TEXT, line INTEGER)")
    t = time.perf_counter()
    rows = [(fid, text, path.name, line) for fid, text, line in plain_lines(path.read_text())]
    con.execute("BEGIN")
    con.executemany("INSERT INTO raw VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", rows)
    con.execute("COMMIT")
    dt = time.perf_counter() - t
    con.close()
    return len(rows) / dt


def ab_rates(tmp: Path, path: Path, rounds: int, first: int = 0) -> dict[str, list[float]]:
    """The fast path, the same with its inner loops in Python (``core.rules.compiled.loops`` off),
    and the reference decision (``decide_batch``, one ``decide`` per frame, plain inserts) on
    fresh stores, in turn, so a busy machine's noise falls on all alike. Rounds are numbered from
    ``first``, and each round's stores are new files: until 2026-12-03 every one-round call reused
    round 0's, so from the second round on the "empty" store held the whole file already and
    every frame was a re-send (a rate 1.3x too high)."""
    from core.rules import compiled

    built = compiled.loops
    names = ("fast", "python", "reference") if built is not None else ("fast", "reference")
    rates: dict[str, list[float]] = {name: [] for name in names}
    try:
        for k in range(first, first + rounds):
            for name in names if k % 2 == 0 else names[::-1]:
                store = tmp / f"ab-{name}-{k}.db"
                assert not store.exists(), f"{store} is not a fresh store"
                compiled.loops = None if name == "python" else built
                with Receiver(str(store)) as r:
                    r.fast_ingest = name != "reference"
                    seconds, n = ingest_file(r, path)
                rates[name].append(n / seconds)
    finally:
        compiled.loops = built
    return rates


def copy_synced(source: Path, target: Path) -> None:
    """A copy of a store, on disk before the ingest into it is timed. Left to the kernel, the
    copy's 250 MiB were written back during the ingest's first sync of the store file (its
    checkpoint): measured on 2026-12-03, that took the loaded commit from 0.065 to 0.15 s and
    the loaded rate from 95-104% of empty to 84-93%, a cost of the bench's copy, not of a big
    ledger."""
    shutil.copyfile(source, target)
    fd = os.open(target, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fill(r: Receiver, n: int, now: float) -> None:
    batch = 50_000
    for start in range(0, n, batch):
        items = [(f"f{i}-1", frame(1, f"F{i % 50}", "WAT", 1 + i % 30, i % 100)) for i in range(start, min(n, start + batch))]
        r.ingest_many(items, now=now, source="bench")


def eviction_stall(r: Receiver, now: float) -> dict:
    """Evict everything old while a reader polls like the console does; report the worst wait."""
    reader = Receiver(r.store_target)
    waits: list[float] = []
    done = threading.Event()

    def poll():
        while not done.is_set():
            t = time.perf_counter()
            reader.totals()
            reader.ranking(limit=20)
            waits.append(time.perf_counter() - t)
            time.sleep(0.01)

    thread = threading.Thread(target=poll)
    thread.start()
    t = time.perf_counter()
    removed = r.evict(now=now, started_by="bench")
    seconds = time.perf_counter() - t
    done.set()
    thread.join()
    reader.close()
    return {"removed": removed, "seconds": seconds, "reads": len(waits),
            "max_read_ms": max(waits) * 1000 if waits else 0.0,
            "p99_read_ms": statistics.quantiles(waits, n=100)[98] * 1000 if len(waits) > 100 else max(waits, default=0) * 1000}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=100_000)
    ap.add_argument("--stored", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the ingest figures, each on an empty store and on a copy of the filled one (medians shown)")
    ap.add_argument("--quick", action="store_true", help="small sizes, to check the bench itself runs")
    ap.add_argument("--only-sqlite", action="store_true", help="the file-store ingest figures only (no backup, "
                    "eviction, PostgreSQL, inbox, gateway or console figures)")
    args = ap.parse_args()
    if args.quick:
        args.frames, args.stored = 5_000, 20_000
    print(f"machine: {os.cpu_count()} cores; mixed file: {args.frames:,} frames ({MIX})")
    with tempfile.TemporaryDirectory(prefix="ussd-bench-") as tmp:
        tmp = Path(tmp)
        empty_file, loaded_file = tmp / "mixed-a.txt", tmp / "mixed-b.txt"
        write_file(empty_file, mixed_lines(args.frames, "a"))
        write_file(loaded_file, mixed_lines(args.frames, "b", seed=2))

        # The 1,000,000-frame store is filled once and copied for each round, so the loaded rate is a
        # median over the same rounds as the empty one (a single run differs from the next by up to
        # a fifth here).
        t0 = time.time() - 40 * DAY
        filled = tmp / "filled.db"
        with Receiver(str(filled)) as r:
            t = time.perf_counter()
            fill(r, args.stored, now=t0)
            print(f"filled {args.stored:,} stored frames in {time.perf_counter() - t:.1f} s")

        raws, rates, loaded_rates = [], {}, []
        for k in range(args.rounds):  # alternately: the ceiling, both paths, then the loaded store
            raws.append(raw_sqlite_rate(tmp / f"raw-{k}.db", empty_file))
            for name, got in ab_rates(tmp, empty_file, 1, first=k).items():
                rates.setdefault(name, []).append(got[0])
            loaded = tmp / f"loaded-{k}.db"
            if k:
                (tmp / f"loaded-{k - 1}.db").unlink()
            copy_synced(filled, loaded)
            with Receiver(str(loaded)) as r:
                seconds, n = ingest_file(r, loaded_file)
            loaded_rates.append(n / seconds)
        raw = statistics.median(raws)
        empty_rate, ref_rate = statistics.median(rates["fast"]), statistics.median(rates["reference"])
        # The ratios are taken round by round (each round's ingest against that round's bare insert,
        # its loaded store against its empty one), then their median: a busy machine slows a whole
        # round, and a ratio within one round is what such a slowdown leaves nearly as it was.
        to_bare = [fast / bare for fast, bare in zip(rates["fast"], raws)]
        to_empty = [loaded / fast for loaded, fast in zip(loaded_rates, rates["fast"])]
        shown = ", ".join(f"{x:,.0f}" for x in rates["fast"])
        print(f"ingest, empty store:        {empty_rate:>10,.0f} frames/s  (median of {args.rounds} runs: {shown})")
        if "python" in rates:
            python_rate = statistics.median(rates["python"])
            print(f"  inner loops in Python:    {python_rate:>10,.0f} frames/s  (core/rules/_fastpath.c not used; "
                  f"compiled {empty_rate / python_rate:.2f}x)")
        else:
            print("  inner loops in Python: core/rules/_fastpath.c was not built (no C compiler at install time)")
        print(f"  reference decision:       {ref_rate:>10,.0f} frames/s  (decide_batch, plain inserts; "
              f"fast path {empty_rate / ref_rate:.2f}x)")
        print(f"bare keyed insert, same rows:{raw:>9,.0f} rows/s    (frame id key, same pragmas, one transaction)")
        shown = ", ".join(f"{x:.3f}" for x in to_bare)
        print(f"ingest / bare keyed insert: {statistics.median(to_bare):>10.3f}          (target >= 0.30; median of "
              f"{args.rounds} interleaved rounds: {shown})")
        loaded_rate = statistics.median(loaded_rates)
        shown = ", ".join(f"{x:,.0f}" for x in loaded_rates)
        print(f"ingest, {args.stored:,} stored: {loaded_rate:>10,.0f} frames/s  (median of {args.rounds} runs: {shown})")
        shown = ", ".join(f"{x:.0%}" for x in to_empty)
        print(f"{args.stored:,} stored / empty: {statistics.median(to_empty):>9.0%}           (target >= 90%; median of "
              f"{args.rounds} interleaved rounds: {shown})")
        with Receiver(str(loaded)) as r:
            if args.only_sqlite:
                return
            backup_figure(tmp, r.store_target, args.stored + n)
            report_figure(tmp, r.store_target, args.stored + n)
            stall = eviction_stall(r, now=time.time())
            print(f"evict {stall['removed']:,} expired rows: {stall['seconds']:.1f} s; a console read meanwhile "
                  f"waited at most {stall['max_read_ms']:.1f} ms (p99 {stall['p99_read_ms']:.1f} ms, {stall['reads']} reads)")
        if not args.only_sqlite:
            postgres_rates(tmp, args.frames)
            extras(tmp, args)


def backup_figure(tmp: Path, db: str, frames: int) -> None:
    """`ussd-console backup` and `backup verify` of the loaded store (a separate figure: its own row)."""
    from core.backup.make import make_backup
    from core.backup.origin import trust_of_home
    from core.backup.verify import verify
    from core.home import Home

    home = Home(tmp / "backup-home").ensure()
    t = time.perf_counter()
    made = make_backup(home, db, tmp / "backups")
    made_s = time.perf_counter() - t
    t = time.perf_counter()
    verify(made.file, trust=trust_of_home(home, db))  # as `backup verify` on the home that made it
    verify_s = time.perf_counter() - t
    print(f"BACKUP of a {frames:,}-frame store: {made_s:.1f} s, {made.size / 2**20:,.1f} MiB "
          f"(store {os.path.getsize(db) / 2**20:,.1f} MiB); backup verify {verify_s:.1f} s")
    made.file.unlink()


def report_figure(tmp: Path, db: str, frames: int) -> None:
    """`ussd-console report` of every case of the loaded store, HTML and PDF, each in a process of its
    own: its wall time and its peak memory (its own maximum resident set: tests/support/peak_memory.py)."""
    import subprocess
    import sys

    from core.home import Home
    from tests.support.peak_memory import run_with_peak

    home = Home(tmp / "report-home").ensure()
    cli = [sys.executable, "-m", "console.cli", "--home", str(home.root), "--db", db]
    root = Path(__file__).resolve().parents[1]
    status = json.loads(subprocess.run([*cli, "status", "--json"], cwd=root, capture_output=True, text=True,
                                       check=True).stdout)
    for fmt in ("html", "pdf"):
        out = tmp / f"report.{fmt}"
        t = time.perf_counter()
        with tempfile.TemporaryFile() as said:
            code, peak_kb = run_with_peak([*cli, "report", "--since", "90d", "--format", fmt, "--to", str(out),
                                           "--force", "--json"], cwd=root, env=dict(os.environ), stdout=said,
                                          stderr=None)
            seconds = time.perf_counter() - t
            said.seek(0)
            got = json.loads(said.read())
        print(f"REPORT ({fmt}) of a {frames:,}-frame store: {seconds:.1f} s, peak memory "
              f"{peak_kb / 1024:,.0f} MB ({got['cases']:,} cases, {got['people']:,} people, "
              f"{out.stat().st_size / 1024:,.0f} KiB){'' if code == 0 else f'; exit status {code}'}")
        # Every case of the store is in the period: its figures are status --json's whole-home ones.
        same = (got["cases"], got["people"]) == (status["cases"], status["headcount_total"])
        print(f"  cases and people {'equal' if same else 'DIFFER from'} status --json's "
              f"({status['cases']:,} cases, {status['headcount_total']:,} people)")


PG_WORKER = """
import sys, time
from core import Receiver
from core.rules.formats import plain_lines
path = sys.argv[2]
items = [(f, t, path, n) for f, t, n in plain_lines(open(path).read())]
with Receiver(sys.argv[1]) as r:
    sys.stdout.write("ready\\n"); sys.stdout.flush()
    sys.stdin.readline()
    t = time.perf_counter()
    r.ingest_many(items, source="bench")
    print(time.perf_counter() - t, len(items))
"""


def postgres_rates(tmp: Path, frames: int) -> None:
    """Aggregate ingest rate with 1, 2 and 4 receiver processes on one PostgreSQL store, on
    disjoint feeds (each its own sessions) and on overlapping ones (every receiver the same
    sessions, in its own order: they race for every frame), with the overlap's exactness."""
    import subprocess
    import sys

    from tests.support.pg_server import PostgresUnavailable, ThrowawayPostgres, fresh_schema_url

    server = ThrowawayPostgres(fsync=True)
    try:
        url = server.start()
    except (PostgresUnavailable, OSError) as exc:
        print(f"PostgreSQL: not measured ({exc})")
        server.stop()
        return
    try:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        for feeds in ("disjoint", "overlapping"):
            for n in (1, 2, 4):
                target = fresh_schema_url(url)
                Receiver(target).close()
                procs = []
                for g in range(n):
                    path = tmp / f"pg-{feeds}-{n}-{g}.txt"
                    prefix = f"g{g}n" if feeds == "disjoint" else "ov"
                    write_file(path, mixed_lines(frames // n if feeds == "disjoint" else frames // 2, prefix, seed=g))
                    procs.append(subprocess.Popen([sys.executable, "-c", PG_WORKER, target, str(path)], env=env,
                                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
                for p in procs:
                    p.stdout.readline()
                t = time.perf_counter()
                for p in procs:
                    p.stdin.write("go\n")
                    p.stdin.flush()
                total = 0
                for p in procs:
                    out, _ = p.communicate(timeout=1800)
                    total += int(out.split()[-1])
                wall = time.perf_counter() - t
                with Receiver(target) as r:
                    got = r.totals()
                exact = got.frames == total and got.applied == got.cases == r.count_cases()
                print(f"ingest, PostgreSQL, {feeds:>11} feeds, {n} receiver{'s' if n > 1 else ' '}: "
                      f"{total / wall:>9,.0f} frames/s  ({total:,} frames in {wall:.2f} s; "
                      f"{got.cases:,} cases; counts {'exact' if exact else 'NOT EXACT'})")
    finally:
        server.stop()


def extras(tmp: Path, args) -> None:
    """Figures from the inbox and the console."""
    from tests.bench_inbox import measure_drop_latency, measure_path_share, measure_spreadsheet

    sheet = measure_spreadsheet(5_000 if args.quick else 100_000)
    print(f".xlsx export taken in: {sheet['rate']:>10,.0f} rows/s  ({sheet['rows']:,} rows, "
          f"{sheet['bytes'] / 1e6:.1f} MB, in {sheet['seconds']:.2f} s: read, ingested, archived as CSV)")

    lat = measure_drop_latency(n_files=50 if args.quick else 200)
    print(f"drop-to-ledger latency, watched inbox: p50 {lat['p50_ms']:.0f} ms, p99 {lat['p99_ms']:.0f} ms "
          f"({lat['n']} files)")
    share = measure_path_share(n_files=50 if args.quick else 200)
    print(f"inbox burst of {share['files']} files, both paths on: observer carried {share['watch']} "
          f"({share['watch'] / share['files']:.0%}), sweep {share['sweep']} "
          f"(sweep every {share['sweep_interval']:g} s)")
    from tests.bench_gateways import measure_gateway_intake, report

    report(measure_gateway_intake(1000 if args.quick else 4000))
    from tools.perf_probe import measure

    for frames in (0, args.stored):
        res = measure(frames, workdir=str(tmp / f"console-{frames}"))
        usable = "" if res["usable_s"] is None else f"; usable {res['usable_s']:.2f} s after the process started"
        print(f"console on {frames:,} stored frames: opens in {res['open_s']:.2f} s "
              f"(+{res['import_s']:.2f} s import{usable}); memory {res['rss_mb']:.0f} MB idle, "
              f"{res['peak_rss_mb']:.0f} MB peak")


if __name__ == "__main__":
    main()
