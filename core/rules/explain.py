"""Plain words for outcomes and reasons, and what exactly was wrong with a rejected line.

Pure functions. The reasons' words are one table, ``core.rules.reasons``. The codes
(``REJECT_BAD_CRC``, ``bad_grammar``) stay exact in ``--json``, the store and the operator's
guide (docs/operator.md); an operator on the screen or the command line reads these words instead. ``explain_reject`` works from the frame
text as the store keeps it (escaped) and the reason code, so it can explain a
reject long after it arrived.
"""

from __future__ import annotations

import re

from .cksum import trailer
from .frame import FRAME_ID_RE, MAX_FRAME_CHARS
from .reasons import REASONS, in_english, reason_words  # noqa: F401 - reason_words is this module's API too

OUTCOME_WORDS = {
    "APPLIED": "applied",
    "DUPLICATE": "duplicate",
    "CONFLICT_QUARANTINED": "conflict, held",
    "REJECT_BAD_FORMAT": "rejected: not a frame",
    "REJECT_BAD_CRC": "rejected: bad checksum",
}

REASON_WORDS = {code: words.long for code, words in REASONS.items()}  # the table is in reasons.py

NO_FRAME_ID = ("this message has a frame but no frame id; a gateway's message id changes with every "
               "re-send, so it cannot stand in (send it as '<frame_id> <frame>', or name the frame id "
               "column in config.toml [inbox] id_columns)")

# The frame's seven fields, what each must be, and its check.
FIELDS = [
    ("version", "H1", re.compile(r"H1")),
    ("place in session", "1-4 digits", re.compile(r"[0-9]{1,4}")),
    ("site", "1-8 letters or digits", re.compile(r"[A-Za-z0-9]{1,8}")),
    ("need", "3 capital letters", re.compile(r"[A-Z]{3}")),
    ("people", "1-6 digits", re.compile(r"[0-9]{1,6}")),
    ("priority", "1-3 digits", re.compile(r"[0-9]{1,3}")),
    ("checksum", "# and 2 hex digits", re.compile(r"#[0-9A-Fa-f]{2}")),
]


def outcome_words(code: str) -> str:
    return OUTCOME_WORDS.get(code, code)


def _quote(value: str, limit: int = 24) -> str:
    return "'" + (value if len(value) <= limit else value[:limit] + "...") + "'"


def _grammar(text: str) -> str:
    fields = text.split("|")
    if len(fields) != len(FIELDS):
        return f"expected {len(FIELDS)} fields, got {len(fields)}"
    for (name, rule, pattern), value in zip(FIELDS, fields):
        if not pattern.fullmatch(value):
            return f"{name} must be {rule}, got {_quote(value)}" if value else f"{name} is empty"
    return REASON_WORDS["bad_grammar"]


def explain_reject(frame_id: str | None, text: str | None, reason: str | None) -> str:
    """What was wrong with one rejected line, in words, e.g. "expected 7 fields, got 5"
    or "checksum says #70, frame says #89"."""
    text = (text or "").strip()
    frame_id = frame_id or ""
    if reason == "bad_trailer":
        body, _, carried = text.rpartition("|#")
        if body:
            return f"checksum says #{trailer(body)}, frame says #{carried.lower()}"
    elif reason == "bad_grammar":
        return _grammar(text)
    elif reason == "too_long":
        return f"{len(text)} characters; a frame has at most {MAX_FRAME_CHARS}"
    elif reason == "not_ascii":
        return "holds characters that are not plain text (shown escaped)"
    elif reason == "bad_frame_id":
        if not frame_id:
            return "no frame id"
        if not FRAME_ID_RE.fullmatch(frame_id):
            return f"frame id {_quote(frame_id)} is not 1-64 letters, digits or . _ : -"
    elif reason == "no_frame_id":
        return NO_FRAME_ID
    elif reason == "id_seq_mismatch":
        fields = text.split("|")
        tail = frame_id.rpartition("-")[2]
        if len(fields) > 1:
            return f"frame id ends in -{tail}, frame says place {fields[1]}"
    return in_english(reason)  # the sentences above are English yet: one language per sentence
