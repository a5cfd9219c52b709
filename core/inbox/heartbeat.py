"""Who is taking the inbox on this home now: one small file per running inbox service.

Each service holds an exclusive ``flock`` on ``<home>/run/receiver-<pid>-<n>.lock``
for as long as it runs and rewrites the ``.json`` beside it (what
it is, its paths' state, its faults) every few seconds, atomically. A reader
(``status``, the metrics) trusts a record only while its lock is held, so a
process killed with SIGKILL stops counting at once, whatever its file says,
and a reused pid cannot pass for it. The next service to start removes
records whose lock nobody holds.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import time
from pathlib import Path

from core.home import open_private, private_folder, replace_private, run_dir

BEAT_EVERY = 2.0
FRESH = 10.0  # seconds: an unlocked lock file younger than this may be a service starting now
_serial = itertools.count(1)  # several services in one process (tests) each have their own record


class Heartbeat:
    def __init__(self, home, role: str):
        self.folder = run_dir(home)
        self.role = role
        self.pid = os.getpid()
        self.started_at = time.time()
        self._fd: int | None = None
        self._last = 0.0
        name = f"receiver-{self.pid}-{next(_serial)}"
        self.lock_path = self.folder / f"{name}.lock"
        self.path = self.folder / f"{name}.json"

    def start(self) -> "Heartbeat":
        private_folder(self.folder)
        _remove_stale(self.folder)
        self._fd = open_private(self.lock_path, os.O_RDWR | os.O_CREAT)
        fcntl.flock(self._fd, fcntl.LOCK_EX)  # our own fresh file: never contended
        return self

    def due(self) -> bool:
        return self._fd is not None and time.time() - self._last >= BEAT_EVERY

    def beat(self, figures: dict) -> None:
        """Rewrite the record. A full disk leaves the last one in place: readers see its age."""
        if self._fd is None:
            return
        now = self._last = time.time()
        record = {"pid": self.pid, "role": self.role, "started_at": self.started_at, "beat_at": now, **figures}
        try:
            replace_private(self.path, json.dumps(record, sort_keys=True).encode("utf-8"))
        except OSError:
            pass  # the inbox itself reports a full disk; a heartbeat must not add a fault of its own

    def stop(self) -> None:
        if self._fd is None:
            return
        for path in (self.path, self.lock_path):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
        os.close(self._fd)
        self._fd = None


def _held(lock_path: Path) -> bool:
    """True while some process holds the lock (the record is live)."""
    try:
        fd = os.open(lock_path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock we took
    return False


def live(home) -> list[dict]:
    """The records of the inbox services running on this home now, oldest first."""
    folder = run_dir(home)
    found = []
    try:
        names = sorted(p.name for p in folder.iterdir() if p.suffix == ".json")
    except FileNotFoundError:
        return []
    for name in names:
        path = folder / name
        if not _held(path.with_suffix(".lock")):
            continue
        try:
            found.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue  # vanished or being replaced this instant; the next look sees it
    return sorted(found, key=lambda r: r.get("started_at", 0))


def _remove_stale(folder: Path) -> None:
    for lock in folder.glob("receiver-*.lock"):
        try:
            if time.time() - lock.stat().st_mtime < FRESH or _held(lock):
                continue
        except FileNotFoundError:
            continue
        for path in (lock.with_suffix(".json"), lock):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
