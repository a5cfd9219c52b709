"""The dedup decision (rules R1–R13) as a pure function of a frame and what is known.

The store gathers ``Known`` for a frame (in bulk, for a whole batch) and this
module says what happens. Keeping the rules free of I/O is what lets the
property tests hammer them and lets every delivery path share one answer.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from .frame import Frame, Rejected, is_rerankable


class Outcome(str, enum.Enum):
    APPLIED = "APPLIED"
    DUPLICATE = "DUPLICATE"
    CONFLICT_QUARANTINED = "CONFLICT_QUARANTINED"
    REJECT_BAD_FORMAT = "REJECT_BAD_FORMAT"
    REJECT_BAD_CRC = "REJECT_BAD_CRC"

    def __str__(self) -> str:  # print as the bare name in logs and tables
        return self.value


class CaseRef(NamedTuple):
    """The applied case a frame's case key points at, as the ledger holds it now."""

    frame_id: str
    text: str
    payload: tuple[str, str, int, int]


class Known(NamedTuple):
    """What the store holds about one frame's identity."""

    seen_text: str | None = None  # the witness kept for this frame_id (R2)
    case: CaseRef | None = None  # the case under this frame's case key (R11, R12)
    settled_texts: frozenset[str] = frozenset()  # versions an operator settled (R13)
    settled_payloads: frozenset[tuple[str, str, int, int]] = frozenset()
    quarantined: bool = False  # this exact newcomer already waits in quarantine


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


def decide(frame: Frame, known: Known) -> Decision:
    """R3–R13 for a frame that parsed and whose trailer is right."""
    return decide_fields(frame, *known)


def decide_fields(frame, seen_text, case, settled_texts, settled_payloads, quarantined) -> Decision:
    """``decide`` with ``Known`` spread out: the batch loop calls this without building one."""
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
