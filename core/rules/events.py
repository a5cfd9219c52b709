"""Alert events for a person: what each kind says, as one plain line and a small details object.

Pure: the store writes what these return into its outbox in the same
transaction as the thing that caused them (``core.store.outbox``), and the
alert targets send it as JSON (``core.alerts``). Every text from outside is
escaped; no event carries a phone number (frames carry none, and file names
and reasons are the escaped ones the inbox already keeps).
"""

from __future__ import annotations

from typing import NamedTuple

from .batch import QuarantineRow
from .reasons import in_english
from .text import escape_text

CONFLICT = "conflict"
FILE_REJECTED = "file_rejected"
FAULT = "fault"
FAULT_CLEARED = "fault_cleared"
CHECKPOINT = "checkpoint"
REPORT = "report"
TEST = "test"

# What `[alerts] events = [...]` may name; `test` is sent by `alerts test` alone.
KINDS = (CONFLICT, FILE_REJECTED, FAULT, FAULT_CLEARED, CHECKPOINT, REPORT)

SUMMARY_MAX = 300


class Event(NamedTuple):
    kind: str
    summary: str  # one plain line for a person
    details: dict


def _line(text: str) -> str:
    return escape_text(text, SUMMARY_MAX)


def conflict(row: QuarantineRow) -> Event:
    """A new conflict, from the quarantine row the batch writes for it (``Writes.new_quarantine``)."""
    frame_id, reason = escape_text(row.frame_id, 64), row.reason
    details = {
        "frame_id": frame_id,
        "case_key": escape_text(row.case_key, 64),
        "reason": reason,
        "source": row.source,
        "first": {"frame_id": escape_text(row.first_frame_id, 64), "frame": escape_text(row.first_text, 200)},
        "newcomer": {"frame_id": frame_id, "frame": escape_text(row.frame_text, 200)},
    }
    summary = (f"Conflict on {details['frame_id']}: {details['newcomer']['frame']} differs from "
               f"{details['first']['frame']} ({in_english(reason)}); held for an operator")
    return Event(CONFLICT, _line(summary), details)


def file_rejected(name: str, reason: str, source: str) -> Event:
    """A whole inbox file moved to ``rejected/`` (``name`` and ``reason`` already escaped)."""
    details = {"file": escape_text(name, 300), "reason": escape_text(reason, 300), "path": source}
    return Event(FILE_REJECTED, _line(f"Inbox file {details['file']} rejected: {details['reason']}"), details)


def fault(what: str, message: str, since: float) -> Event:
    details = {"what": escape_text(what, 200), "message": escape_text(message, 500), "since": since}
    return Event(FAULT, _line(f"Receiver fault: {details['message']}"), details)


def fault_cleared(what: str, message: str, since: float, cleared_at: float) -> Event:
    details = {"what": escape_text(what, 200), "message": escape_text(message, 500), "since": since,
               "cleared_at": cleared_at, "lasted_seconds": round(max(0.0, cleared_at - since), 1)}
    return Event(FAULT_CLEARED, _line(f"Receiver fault cleared after {details['lasted_seconds']:g} s: "
                                      f"{details['message']}"), details)


def checkpoint(count: int, head_hash: str, line: str | None = None, operators: dict | None = None,
               problem: str | None = None) -> Event:
    """The audit log's checkpoint, so a copy of it lives away from the machine: ``line`` is what
    ``audit verify --checkpoint`` takes back; ``problem`` says why a log that does not verify has none."""
    details = {"entries": int(count), "head": head_hash}
    if line is not None:
        details.update(checkpoint=line, operators=dict(sorted((operators or {}).items())))
        summary = f"Audit log checkpoint, keep it: {line}"
    else:
        details["problem"] = problem or "the log does not verify"
        summary = f"Audit log at {count} entries does NOT verify: {details['problem']}"
    return Event(CHECKPOINT, _line(summary), details)


def report(file: str, pdf: str, cases: int, people: int, since: float, until: float) -> Event:
    """A scheduled situation report written (``file`` the HTML, ``pdf`` the PDF beside it)."""
    details = {"file": escape_text(file, 500), "pdf": escape_text(pdf, 500), "cases": int(cases),
               "people": int(people), "since": since, "until": until}
    return Event(REPORT, _line(f"Situation report: {cases:,} new cases, {people:,} people; {details['file']}"),
                 details)


def test(home: str) -> Event:
    details = {"home": escape_text(home, 300)}
    return Event(TEST, _line(f"Test alert from ussd-console on {details['home']}"), details)
