"""Drop-to-ledger latency of the inbox (docs/rules.md#performance-targets: p99 under 200 ms).

Each file is written under the home, renamed into the inbox of a running
``InboxService`` (default settings, observer and sweep both on), and timed
until a separate read-only connection sees its frames in the store: the
ledger as any reader would see it, not the service's own word for it.
Files are dropped one at a time so the figure is latency, not queueing.

``measure_path_share`` counts how a burst of files splits between the observer
and the sweep when both run (docs/rules.md, delivery: the observer should carry nearly all).

``make bench`` calls both; ``python -m tests.bench_inbox`` prints them alone.
"""

from __future__ import annotations

import math
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.rules.cksum import trailer  # noqa: E402
from core.home import Home  # noqa: E402
from core.inbox import InboxService  # noqa: E402

FRAMES_PER_FILE = 3
TIMEOUT_S = 5.0  # per file; a file not seen by then fails the run rather than hanging it


def _frame(seq: int, site: str, headcount: int) -> str:
    body = f"H1|{seq}|{site}|MED|{headcount}|50"
    return f"{body}|#{trailer(body)}"


def _file_text(n: int) -> tuple[str, str]:
    """A small gateway file; returns its text and the id of its last frame."""
    lines = [f"b{n}r{k}-{k} {_frame(k, 'Bench', k + n % 7)}" for k in range(1, FRAMES_PER_FILE + 1)]
    return "\n".join(lines) + "\n", f"b{n}r{FRAMES_PER_FILE}-{FRAMES_PER_FILE}"


def _percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def measure_drop_latency(n_files: int = 200) -> dict:
    """Rename ``n_files`` files into a watched inbox one by one; latency until each shows in the ledger."""
    latencies: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ussd-bench-inbox-") as tmp:
        home = Home(Path(tmp) / "home").ensure()
        staging = home.root / "staging"
        staging.mkdir()
        service = InboxService(home).start()
        reader = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True, timeout=5)
        try:
            for n in range(n_files):
                text, last_id = _file_text(n)
                src = staging / f"drop-{n:05d}.txt"
                src.write_text(text, encoding="ascii")
                t0 = time.perf_counter()
                os.rename(src, home.inbox / src.name)
                while True:
                    row = reader.execute("SELECT 1 FROM seen_frames WHERE frame_id = ?", (last_id,)).fetchone()
                    elapsed = time.perf_counter() - t0
                    if row is not None:
                        break
                    if elapsed > TIMEOUT_S:
                        raise RuntimeError(f"{src.name} did not reach the ledger within {TIMEOUT_S:g} s")
                    time.sleep(0.0005)
                latencies.append(elapsed * 1000)
        finally:
            reader.close()
            service.stop(timeout=10)
    ordered = sorted(latencies)
    return {
        "p50_ms": round(statistics.median(ordered), 1),
        "p99_ms": round(_percentile(ordered, 0.99), 1),
        "max_ms": round(ordered[-1], 1),
        "n": len(ordered),
    }


def measure_path_share(n_files: int = 200, sweep_interval: float = 0.05) -> dict:
    """Both paths on, a burst of ``n_files`` backdated files renamed in at once: which path won how many.

    Backdated, so the sweep may take any file it lists; the observer's events race it. A share,
    so a figure to print, never a test's assertion: it moves with the machine and its load.
    """
    from core.config import InboxConfig
    from core.inbox import file_counts

    with tempfile.TemporaryDirectory(prefix="ussd-bench-share-") as tmp:
        home = Home(Path(tmp) / "home").ensure()
        staging = home.root / "staging"
        staging.mkdir()
        service = InboxService(home, config=InboxConfig(sweep_interval=sweep_interval, settle_time=0.2)).start()
        try:
            past = time.time() - 30
            for n in range(n_files):
                src = staging / f"burst-{n:05d}.txt"
                src.write_text(_file_text(n)[0], encoding="ascii")
                os.utime(src, (past, past))
                os.rename(src, home.inbox / src.name)
            deadline = time.monotonic() + 120
            while sum(file_counts(service.receiver).values()) < n_files:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{n_files} files were not all taken within 120 s")
                time.sleep(0.01)
            counts = file_counts(service.receiver)
        finally:
            service.stop(timeout=10)
    return {"files": n_files, "watch": counts.get("watch", 0), "sweep": counts.get("sweep", 0),
            "sweep_interval": sweep_interval}


if __name__ == "__main__":
    started = time.perf_counter()
    result = measure_drop_latency()
    print(f"inbox drop-to-ledger latency over {result['n']} files: p50 {result['p50_ms']} ms, "
          f"p99 {result['p99_ms']} ms (max {result['max_ms']} ms; target p99 < 200 ms); "
          f"{time.perf_counter() - started:.1f} s")
    share = measure_path_share()
    print(f"inbox paths on a burst of {share['files']} files: observer {share['watch']} "
          f"({share['watch'] / share['files']:.0%}), sweep {share['sweep']} (sweep every {share['sweep_interval']:g} s)")


def measure_spreadsheet(rows: int = 100_000) -> dict:
    """A gateway's .xlsx export of ``rows`` messages (id, phone, text, date) taken in by ``deliver``:
    read through python-calamine, ingested, archived as a CSV without the phone column."""
    from core.config import InboxConfig
    from core.inbox import deliver, prepare_home
    from core.receiver import Receiver
    from tests.support.spreadsheets import xlsx_bytes

    table = [["Message ID", "Sender Number", "Message Content", "Received"]]
    table += [[n, f"+2547{n:08d}", f"x{n}-1 {_frame(1, 'Sheet', n % 50 + 1)}", "2024-05-01 10:00"]
              for n in range(rows)]
    data = xlsx_bytes(table)
    with tempfile.TemporaryDirectory(prefix="ussd-bench-xlsx-") as tmp:
        home = Home(Path(tmp) / "home").ensure()
        prepare_home(home)
        path = home.inbox / "export.xlsx"
        path.write_bytes(data)
        past = time.time() - 60
        os.utime(path, (past, past))
        with Receiver(str(home.db)) as r:
            t = time.perf_counter()
            result = deliver(path, "bench", r, home, InboxConfig(max_file_bytes=1 << 30))
            seconds = time.perf_counter() - t
        assert result.status == "done" and len(result.verdicts) == rows, result
    return {"rows": rows, "bytes": len(data), "seconds": seconds, "rate": rows / seconds}
