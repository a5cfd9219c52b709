"""The demo story in a store at fixed times: the data of the snapshot tests and screenshots.

The same sample files the demo's gateway delivers, ingested through the
receiver with a fixed clock, so every picture of the console is the same on
every machine (given the same time zone).
"""

from __future__ import annotations

from pathlib import Path

from console.demo.gateway_sim import SAMPLES, STORY
from core import Receiver
from core.home import Home
from core.rules.formats import read_items
from core.signing.marks import MARK
from core.signing.signed_action import sign
from core.signing.operator_add import add_operator

# 2024-05-02 09:30:00 UTC: the fixed "now" of the pictures.
FIXED_NOW = 1714642200.0
MINUTE = 60.0
DAY = 86400.0
OPERATOR, PASSPHRASE = "amina", "correct horse"  # the pictures' operator (a throwaway key)
SOURCES = ["watch", "watch", "watch", "sweep", "watch", "watch", "cli", "watch", "watch", "watch"]


def sample_items(path: Path, name: str | None = None) -> list[tuple]:
    """The file's frames as the inbox reads them (plain, CSV or JSON lines), named ``name``."""
    items, _fmt = read_items(path.name, path.read_bytes())
    return [(fid, frame, name or path.name, line) for fid, frame, line in items]


def build(home: Home, now: float = FIXED_NOW, samples: Path = SAMPLES) -> Home:
    """Fill ``home``'s store with the story; return the home."""
    home.ensure()
    with Receiver(str(home.db)) as receiver:
        # Forty days ago Ifo sent its session once; the hourly eviction has since
        # removed those dedup witnesses (the cases stay).
        receiver.ingest_many(sample_items(samples / "08-ifo-session.txt"), now=now - 40 * DAY, source="watch")
        receiver.evict(now=now - 2 * 3600, started_by="schedule")
        at = now - 50 * MINUTE
        for step, source in zip(STORY, SOURCES):
            at += step.after * MINUTE / 2
            receiver.ingest_many(sample_items(samples / step.sample, step.name), now=at, source=source)
    return home


def add_lifecycle(home: Home, now: float = FIXED_NOW) -> Home:
    """An operator, and two signed marks: a team sent to kak01-1 (while its correction waits,
    so it is disputed) and dad01-1 served (it has left the ranking)."""
    with Receiver(str(home.db)) as receiver:
        add_operator(home, receiver, OPERATOR, PASSPHRASE, now=now - 20 * MINUTE)
        for fid, status, reason, at in (
            ("kak01-1", "dispatched", "Kakuma1 clinic team sent", now - 12 * MINUTE),
            ("dad01-1", "dispatched", "food truck left Dadaab", now - 10 * MINUTE),
            ("dad01-1", "served", "40 rations handed over", now - 4 * MINUTE),
        ):
            sign(home, receiver, MARK, {"frame_id": fid, "status": status},
                 operator=OPERATOR, passphrase=PASSPHRASE, reason=reason, now=at)
    return home
