"""The dedup decision (docs/rules.md#rules, R1-R13) as a pure function of a frame and what is known.

The store gathers what it knows about a batch's ids in bulk (``core.rules.batch.Facts``)
and ``decide`` says what happens to each frame. Keeping the rules free of I/O is what
lets the table tests and the property tests hammer them, and lets every delivery path
share one answer.
"""

from __future__ import annotations

import enum
from typing import Collection, NamedTuple

from .frame import Frame, Rejected, is_rerankable


class Outcome(str, enum.Enum):
    APPLIED = "APPLIED"
    DUPLICATE = "DUPLICATE"
    CONFLICT_QUARANTINED = "CONFLICT_QUARANTINED"
    REJECT_BAD_FORMAT = "REJECT_BAD_FORMAT"
    REJECT_BAD_CRC = "REJECT_BAD_CRC"

    def __str__(self) -> str:  # print as the bare name in logs and tables
        return self.value


def payload_key(payload: tuple[str, str, int, int]) -> str:
    """The settlement key of a version's payload (site, need, headcount, pri), as stored (R13).

    One definition for the signed resolution that writes settlements and the
    batch that reads them: if the two ever differed, a settled version would
    silently stop matching and raise its conflict again.
    """
    site, need, headcount, pri = payload
    return f"{site}|{need}|{headcount}|{pri}"


def payload_from_key(key: str) -> tuple[str, str, int, int]:
    site, need, headcount, pri = key.split("|")
    return (site, need, int(headcount), int(pri))


class CaseRef(NamedTuple):
    """The applied case a frame's case key points at, as the ledger holds it now."""

    frame_id: str
    text: str
    payload: tuple[str, str, int, int]


class Decision(NamedTuple):
    outcome: Outcome
    reason: str
    # True when the store must write a dedup witness for this frame_id.
    record_seen: bool = False


NEW = Decision(Outcome.APPLIED, "new", record_seen=True)
RETRANSMIT = Decision(Outcome.DUPLICATE, "retransmit")
RESOLVED = Decision(Outcome.DUPLICATE, "resolved_earlier")
AFTER_EVICTION = Decision(Outcome.DUPLICATE, "after_eviction", record_seen=True)
RERANK = Decision(Outcome.DUPLICATE, "rerank", record_seen=True)
SAME_ID = Decision(Outcome.CONFLICT_QUARANTINED, "same_frame_id_different_payload")
SAME_CASE = Decision(Outcome.CONFLICT_QUARANTINED, "same_case_different_payload")
ALREADY_QUARANTINED = Decision(Outcome.CONFLICT_QUARANTINED, "already_quarantined")


def reject(parsed: Frame | Rejected) -> Decision | None:
    """R1: format and trailer are judged before any dedup state is consulted."""
    if isinstance(parsed, Rejected):
        return Decision(Outcome.REJECT_BAD_FORMAT, parsed.reason)
    if not parsed.trailer_ok:
        return Decision(Outcome.REJECT_BAD_CRC, "bad_trailer")
    return None


def decide(frame: Frame, seen_text: str | None = None, case: CaseRef | None = None,
           settled_texts: Collection[str] = frozenset(), settled_payloads: Collection[tuple] = frozenset(),
           quarantined: bool = False) -> Decision:
    """R2-R13 for a frame that parsed and whose trailer is right (R1: ``reject`` first).

    What the store knows about the frame comes as plain arguments (no record to
    build per frame on the batch's hot path): the witness kept for its id, the
    case under its case key, the settled versions of that case, and whether
    this exact newcomer already waits in quarantine.
    """
    text = frame.text
    if settled_texts and (
        text in settled_texts or (is_rerankable(frame.case_key) and frame.payload in settled_payloads)
    ):
        return RESOLVED  # R13: either version of a settled conflict, or its re-rank
    if seen_text is not None:
        if seen_text == text:
            return RETRANSMIT  # R3, R4
        return ALREADY_QUARANTINED if quarantined else SAME_ID  # R5
    if case is None:
        return NEW
    if case.frame_id == frame.frame_id:  # R11: witness evicted, case still applied
        if case.text == text:
            return AFTER_EVICTION
        return ALREADY_QUARANTINED if quarantined else SAME_ID
    if is_rerankable(frame.case_key) and case.payload == frame.payload:  # R12
        return RERANK
    return ALREADY_QUARANTINED if quarantined else SAME_CASE
