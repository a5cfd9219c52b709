"""The batch decision: a chunk of offered frames plus what the store knows -> verdicts and rows.

Pure: ``decide_batch`` takes the parsed chunk and the ``Facts`` the store
gathered about its ids and case keys in a few set-based queries, and returns
a ``Verdict`` per frame plus ``Writes``, the rows the store then inserts in
the same transaction (R8). The store does no deciding of its own, so the rules
are tested here without a database (tests/test_rules_decide.py).

Frames are decided in order and ``facts`` is updated as the batch goes, so a
frame sees every frame before it in its own batch exactly as if they had been
committed (two copies of one new frame in a batch: the second is a retransmit).
"""

from __future__ import annotations

from collections import Counter as Tally
from typing import NamedTuple, Sequence

from .decide import CaseRef, Outcome, decide, reject
from .frame import Frame
from .privacy import mask_phones
from .text import escape_text

ACTIVITY_KEEP = 5000  # rows of the live feed kept


class Verdict(NamedTuple):
    """What happened to one offered frame."""

    frame_id: str
    outcome: Outcome
    reason: str
    source: str = "api"
    file: str | None = None
    line: int | None = None

    @property
    def alert(self) -> bool:
        """A new conflict: the operator must be told (a repeat of a queued one is not new)."""
        return self.outcome is Outcome.CONFLICT_QUARANTINED and self.reason != "already_quarantined"

    def as_dict(self) -> dict:
        return {
            "frame_id": self.frame_id,
            "outcome": self.outcome.value,
            "reason": self.reason,
            "source": self.source,
            "file": self.file,
            "line": self.line,
        }


class Facts(NamedTuple):
    """What the store holds about a batch's frame ids and case keys (only those)."""

    seen: dict[str, str]  # frame_id -> the witness text kept for it (R2)
    quarantined: set[tuple[str, str]]  # (frame_id, text) already waiting in quarantine
    cases: dict[str, CaseRef]  # case_key -> the applied case (R11, R12)
    settled_texts: dict[str, set[str]]  # case_key -> versions an operator settled (R13)
    settled_payloads: dict[str, set[tuple]]  # case_key -> their payloads, for re-ranks of them


class Writes(NamedTuple):
    """The rows one batch adds or changes; column order is the store's insert order."""

    seen_rows: list  # new dedup witnesses
    case_rows: list  # newly applied cases
    reject_rows: list
    activity_rows: list  # the newest verdicts, for the live feed
    seen_bumps: dict  # frame_id -> retransmits counted against its witness
    new_quarantine: list  # new conflicts
    quarantine_bumps: dict  # (frame_id, text) -> repeats of a queued conflict
    outcomes: Tally  # outcome name -> frames
    added_cases: int
    added_headcount: int


def _masked(value, limit: int) -> str:
    """Outside text for a reject row: masked before escaping (a number cut at the limit is still
    masked whole) and after (an escape can turn a separator into one the mask knows)."""
    if value is None:
        return ""
    return mask_phones(escape_text(mask_phones(value) if isinstance(value, str) else value, limit))


def needs_facts(results: Sequence) -> list[Frame]:
    """The frames the store must be asked about: those that parsed with a good trailer (R1)."""
    return [f for f in results if f.__class__ is Frame and f.trailer_ok]


def decide_batch(chunk: Sequence[Sequence], results: Sequence, facts: Facts, now: float,
                 source: str) -> tuple[list[Verdict], Writes]:
    """Decide every item of ``chunk`` (``(frame_id, text[, file, line])``, parsed into ``results``).

    The loop is the receiver's hot path: lookups and enum members are hoisted
    into locals, and rows are plain tuples in insert order.
    """
    verdicts: list[Verdict] = []
    append = verdicts.append
    seen_rows, case_rows, reject_rows = [], [], []
    seen_bumps: dict[str, int] = {}
    new_quarantine: dict[tuple[str, str], list] = {}
    quarantine_bumps: dict[tuple[str, str], int] = {}
    added_cases = added_headcount = 0
    empty_set: frozenset = frozenset()
    seen, quarantined, cases = facts.seen, facts.quarantined, facts.cases
    settled_texts, settled_payloads = facts.settled_texts, facts.settled_payloads
    # A file label comes from outside (a path given to `ingest`): stored escaped unless it is
    # printable ASCII already (the inbox's labels are). Every item of one file carries the
    # same string, so it is checked once per file.
    raw_file = shown_file = None
    # Enum member lookups and ``.value`` are slow descriptors; hoist them out of the loop.
    APPLIED, DUPLICATE, CONFLICT = Outcome.APPLIED, Outcome.DUPLICATE, Outcome.CONFLICT_QUARANTINED
    value_of = {o: o.value for o in Outcome}
    seen_get, cases_get = seen.get, cases.get
    for result, item in zip(results, chunk):
        file, line = (item[2], item[3]) if len(item) > 2 else (None, None)
        if file is not None:
            if file is not raw_file:
                safe = isinstance(file, str) and file.isascii() and file.isprintable()
                raw_file, shown_file = file, mask_phones(file if safe else escape_text(file, 200))
            file = shown_file
        if result.__class__ is not Frame or not result.trailer_ok:
            fid, text = item[0], item[1]
            bad = reject(result)
            # Not a frame, so it may carry anything, a phone number included: escaped and masked.
            shown_id = _masked(fid, 80)
            reject_rows.append(
                (now, source, value_of[bad.outcome], bad.reason, shown_id,
                 _masked(text, 200), file, line)
            )
            # A rejected id may carry anything; only its escaped form travels on.
            append(Verdict(shown_id, bad.outcome, bad.reason, source, file, line))
            continue
        frame: Frame = result
        frame_id, ftext, key = frame.frame_id, frame.text, frame.case_key
        seen_text = seen_get(frame_id)
        case = cases_get(key)
        outcome, reason, record_seen = decide(
            frame,
            seen_text,
            case,
            settled_texts.get(key, empty_set),
            settled_payloads.get(key, empty_set),
            (frame_id, ftext) in quarantined,
        )
        if record_seen:
            seen_rows.append((frame_id, ftext, ftext[-2:], now, now, 1, source))
            seen[frame_id] = ftext
        elif outcome is DUPLICATE and seen_text == ftext:
            seen_bumps[frame_id] = seen_bumps.get(frame_id, 0) + 1
        if outcome is APPLIED:
            case_rows.append(
                (key, frame_id, ftext, frame.seq, frame.site, frame.need,
                 frame.headcount, frame.pri, now, now, source, 1)
            )
            cases[key] = CaseRef(frame_id, ftext, frame.payload)
            added_cases += 1
            added_headcount += frame.headcount
        elif outcome is CONFLICT:
            qkey = (frame_id, ftext)
            if qkey in new_quarantine:
                new_quarantine[qkey][8] += 1
            elif qkey in quarantined:
                quarantine_bumps[qkey] = quarantine_bumps.get(qkey, 0) + 1
            else:
                if seen_text is not None:
                    first_id, first_text = frame_id, seen_text
                else:
                    first_id, first_text = case.frame_id, case.text
                new_quarantine[qkey] = [
                    frame_id, key, ftext, first_id, first_text,
                    reason, now, now, 1, source, "open",
                ]
                quarantined.add(qkey)
        append(Verdict(frame_id, outcome, reason, source, file, line))
    outcomes = Tally(value_of[v[1]] for v in verdicts)
    # Only the newest rows of the feed are kept, so older ones are never written.
    activity_rows = [(now, source, v[0], value_of[v[1]], v[2], v[4], v[5]) for v in verdicts[-ACTIVITY_KEEP:]]
    writes = Writes(seen_rows, case_rows, reject_rows, activity_rows, seen_bumps, list(new_quarantine.values()),
                    quarantine_bumps, outcomes, added_cases, added_headcount)
    return verdicts, writes

