"""Small builders shared by the tests."""

from __future__ import annotations

from pathlib import Path

from core.rules.cksum import trailer

ROOT = Path(__file__).resolve().parents[2]
# The public scenarios, carried by the repository so any clone can run them.
SCENARIOS = ROOT / "tests" / "vectors" / "scenarios.json"


def frame(seq: int, site: str, need: str, headcount: int, pri: int) -> str:
    """A well-formed frame with the right trailer."""
    body = f"H1|{seq}|{site}|{need}|{headcount}|{pri}"
    return f"{body}|#{trailer(body)}"


def is_seen(receiver, frame_id: str) -> bool:
    """Whether the store keeps a dedup witness for ``frame_id``."""
    S = receiver.m.SeenFrame
    return S.select().where(S.frame_id == frame_id).exists()


def quarantine_item(receiver, qid: int) -> dict | None:
    Q = receiver.m.Quarantine
    return Q.select().where(Q.id == qid).dicts().first()


def bad_trailer(text: str) -> str:
    """The same frame with its trailer changed to a wrong one."""
    right = text[-2:]
    wrong = f"{(int(right, 16) + 1) % 256:02x}"
    return text[:-2] + wrong
