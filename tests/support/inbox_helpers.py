"""Builders for the inbox tests: gateway files, maildir-style drops, polling."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from core.clock import SYSTEM, Clock
from core.config import InboxConfig
from core.home import Home
from core.inbox import HOLD_ENV, InboxService
from tests.support.helpers import frame
from tests.support.waiting import wait_for

NEEDS = ("MED", "SHE", "WAT", "FOO", "PRO")


def frame_lines(prefix: str, count: int, start: int = 0) -> list[str]:
    """``count`` distinct valid ``frame_id frame`` lines (one case each)."""
    out = []
    for n in range(start, start + count):
        seq = n % 9 + 1
        out.append(f"{prefix}{n}-{seq} {frame(seq, 'Site' + str(n % 7), NEEDS[n % 5], n % 40 + 1, n % 99 + 1)}")
    return out


def text_of(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def drop(home: Home, name: str, data: str | bytes, age: float = 0.0) -> Path:
    """Write under the home, then rename into the inbox (the maildir habit); ``age`` backdates the mtime."""
    staging = home.root / "staging"
    staging.mkdir(exist_ok=True)
    src = staging / name
    src.write_bytes(data.encode() if isinstance(data, str) else data)
    if age:
        past = time.time() - age
        os.utime(src, (past, past))
    target = home.inbox / name
    os.rename(src, target)
    return target


def every_file_under(root: Path):
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink():
                yield path


@contextlib.contextmanager
def started_services(home, **defaults):
    """Yield ``start(on_verdicts=None, clock=SYSTEM, **settings)``; every service it started is
    stopped after. A test that moves time on passes its own clock (tests/support/clock.py)."""
    services = []

    def start(on_verdicts=None, clock: Clock = SYSTEM, **settings) -> InboxService:
        config = InboxConfig(**{**defaults, **settings})
        service = InboxService(home, config=config, on_verdicts=on_verdicts, clock=clock)
        services.append(service.start())
        return service

    try:
        yield start
    finally:
        for service in services:
            service.stop(timeout=60)


def archived(home) -> list[str]:
    return sorted(p.name for p in home.processed.rglob("*") if p.is_file())


class Holds:
    """The receiver's hold-after-commit hook seen from a test: each marker is a worker that has
    just committed a batch of a claimed file and waits, until the marker is removed or it stops."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.seen: set[str] = set()

    @property
    def env(self) -> dict[str, str]:
        """The variable that turns the hook on, for a child process or ``monkeypatch.setenv``."""
        return {HOLD_ENV: str(self.folder)}

    def held(self, pid: int | None = None) -> list[Path]:
        prefix = f"{pid}-" if pid is not None else ""
        return sorted(p for p in self.folder.glob(f"{prefix}*.held"))

    def next(self, pid: int | None = None, alive=lambda: True, timeout: float = 60.0) -> Path | None:
        """The first marker not seen before; None if ``alive()`` turns false first."""
        def fresh():
            if not alive():
                return "gone"
            return next((p for p in self.held(pid) if p.name not in self.seen), None)

        found = wait_for(fresh, timeout=timeout, interval=0.005, what="a worker held after a commit")
        if found == "gone":
            return None
        self.seen.add(found.name)
        return found

    @staticmethod
    def where(marker: Path) -> tuple[str, int]:
        """(claim name, line committed) of a held worker."""
        claim, line = marker.read_text().splitlines()
        return claim, int(line)

    def release(self, pid: int | None = None) -> None:
        """Let every held worker (of ``pid``) go on to its next commit."""
        for marker in self.held(pid):
            marker.unlink(missing_ok=True)
