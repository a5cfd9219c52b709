"""How fast the console opens on a big store, and how much memory it holds (docs/rules.md#performance-targets).

``measure(frames)`` builds (or reuses) a store of that many frames, then opens
the console in a fresh process, headless at 80x24 with the inbox running, and
returns a dict:

- ``open_s``: from creating the app to the first screen of data drawn;
- ``import_s``: importing the console (Textual and the core) in that process, as the command
  line does it (on a SQLite home without PostgreSQL's driver, ``console.startup``);
- ``usable_s``: from the process's start (the interpreter's own included) to that first screen,
  what an operator waits after typing the command (``None`` where ``/proc`` does not say);
- ``rss_mb`` / ``peak_rss_mb``: resident memory after a few idle seconds, and its peak.

A fresh process, so the numbers are the console's own and not the builder's.
``python -m tools.perf_probe 1000000`` prints the dict as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SITES = ["Kakuma1", "Kakuma2", "Dadaab1", "Ifo2", "Hagadera", "Kalobeye", "Nadapal", "Lokichog"]
NEEDS = ["MED", "SHE", "WAT", "FOO", "PRO"]
BATCH = 50_000
IDLE_SECONDS = 3.0


def build_store(db_path: str, frames: int) -> float:
    """Ingest ``frames`` distinct cases (spread over 40 days); return the seconds it took."""
    from core import Receiver
    from core.rules.cksum import trailer

    started = time.perf_counter()
    base = time.time() - 40 * 86400
    step = 40 * 86400 / max(frames, 1)
    with Receiver(db_path) as receiver:
        batch = []
        for i in range(frames):
            seq = 1 + i % 3
            body = f"H1|{seq}|{SITES[i % 8]}|{NEEDS[(i // 8) % 5]}|{1 + (i * 7919) % 40}|{1 + (i * 104729) % 99}"
            batch.append((f"p{i}-{seq}", f"{body}|#{trailer(body)}"))
            if len(batch) == BATCH:
                receiver.ingest_many(batch, now=base + i * step, source="watch")
                batch = []
        if batch:
            receiver.ingest_many(batch, now=base + frames * step, source="watch")
    return time.perf_counter() - started


def _memory() -> dict:
    """Resident and peak memory of this process in MB (Linux /proc)."""
    out = {}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key = "rss_mb" if line.startswith("VmRSS") else "peak_rss_mb"
                    out[key] = round(int(line.split()[1]) / 1024, 1)
    except OSError:
        import resource

        out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def _since_process_start() -> float | None:
    """Seconds since this process started, from the kernel's own record (10 ms ticks)."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return round(uptime - start_ticks / os.sysconf("SC_CLK_TCK"), 2)


def open_console(home_dir: str, idle: float = IDLE_SECONDS) -> dict:
    """In this process: open the console on ``home_dir`` headless and time it."""
    started = time.perf_counter()
    from console.startup import import_store_driver

    import_store_driver(["--home", home_dir])
    from console.app import ConsoleApp
    from core.home import Home

    imported = time.perf_counter()
    result: dict = {"import_s": round(imported - started, 3)}
    app = ConsoleApp(Home(Path(home_dir)), evict_every=None)
    created = time.perf_counter()

    async def pilot(p) -> None:
        await app.settled(timeout=60)
        result["open_s"] = round(time.perf_counter() - created, 3)
        result["usable_s"] = _since_process_start()
        result["rows_shown"] = len(app.panel().query_one("KeyedTable").row_keys)
        await p.pause(idle)
        result.update(_memory())
        app.exit()

    app.run(headless=True, size=(80, 24), auto_pilot=pilot)
    return result


def measure(frames: int = 1_000_000, workdir: str | None = None) -> dict:
    """Build a store of ``frames`` (reused if ``workdir`` already has one) and probe the console on it."""
    root = Path(workdir or tempfile.mkdtemp(prefix="ussd-probe-"))
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    db = home / "receiver.db"
    built = None if db.exists() else round(build_store(str(db), frames), 1)
    child = subprocess.run(
        [sys.executable, "-m", "tools.perf_probe", "--open", str(home)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    if child.returncode != 0:
        raise RuntimeError(f"console probe failed: {child.stderr.strip()[-500:]}")
    out = {"frames": frames, "build_s": built, "store_mb": round(db.stat().st_size / 2**20, 1)}
    out.update(json.loads(child.stdout.strip().splitlines()[-1]))
    return out


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--open":
        print(json.dumps(open_console(argv[1])))
        return 0
    frames = int(argv[0]) if argv else 1_000_000
    print(json.dumps(measure(frames, argv[1] if len(argv) > 1 else None)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
