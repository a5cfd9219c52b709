"""The batch decision: a chunk of offered frames plus what the store knows -> verdicts and rows.

Pure: ``BatchState`` starts from the ``Facts`` the store gathered about a
chunk's ids and case keys in a few set-based queries (a copy: the store's
``Facts`` are never changed), ``decide`` gives a ``Verdict`` per offered frame,
and ``writes`` holds the rows the store then inserts in the same transaction
(R8). The store does no deciding of its own, so the rules are tested here
without a database (tests/test_rules_decide.py).

Frames are decided in order and the state takes in each one, so a frame sees
every frame before it in its own batch exactly as if they had been committed
(two copies of one new frame in a batch: the second is a retransmit).

Each table the batch writes has one row type below; its fields are the
table's insert columns, in order, and the store's writer takes them from
``_fields``, so a column list is written once.
"""

from __future__ import annotations

from collections import Counter as Tally
from functools import partial
from itertools import compress, repeat
from operator import attrgetter, itemgetter
from typing import Iterable, NamedTuple, Sequence

from . import compiled
from .decide import CaseRef, Outcome, decide, reject
from .frame import Frame, Rejected, parse
from .privacy import mask_phones
from .text import escape_text

ACTIVITY_KEEP = 5000  # rows of the live feed kept


_new_tuple = tuple.__new__


def _builder(row_type):
    """A constructor for ``row_type`` that takes the row as one tuple and runs no Python code:
    a NamedTuple's own ``__new__`` is a Python function, and these are built for every frame."""
    return partial(_new_tuple, row_type)


class Offer(NamedTuple):
    """One item offered to the receiver: a frame id and text as they came (anything: they are
    outside input), and for a frame read from a file, the file's label and the line."""

    frame_id: object
    text: object
    file: str | None = None
    line: int | None = None


_offer = _builder(Offer)
_TUPLES, _FOUR = frozenset((tuple, Offer)), {4}


def as_offers(items: Iterable[Sequence]) -> list[Offer]:
    """Items as ``Offer``s; a plain ``(frame_id, text)`` or ``(frame_id, text, file, line)``
    tuple is taken too and converted here, once, at the API boundary."""
    if items.__class__ is list and items and set(map(type, items)) <= _TUPLES and set(map(len, items)) == _FOUR:
        return list(map(_offer, items))  # an inbox file's items, or offers: in C
    offers = []
    append = offers.append
    for item in items:
        if item.__class__ is Offer:
            append(item)
        elif len(item) == 4:  # an inbox file's items: the hot case, built without Python code
            append(_new_tuple(Offer, item))
        else:
            append(Offer(*item))  # a wrong shape raises TypeError here, before anything is written
    return offers


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


class SeenRow(NamedTuple):
    """A new dedup witness (table ``seen_frames``, R2)."""

    frame_id: str
    frame_text: str
    crc8: str
    first_seen: float
    last_seen: float
    seen_count: int
    last_source: str


class CaseRow(NamedTuple):
    """A newly applied case (table ``cases``)."""

    case_key: str
    frame_id: str
    frame_text: str
    seq: int
    site: str
    need: str
    headcount: int
    pri: int
    first_seen: float
    updated_at: float
    source: str
    version: int


class QuarantineRow(NamedTuple):
    """A new conflict held for an operator (table ``quarantine``, R5, R10)."""

    frame_id: str
    case_key: str
    frame_text: str
    first_frame_id: str
    first_text: str
    reason: str
    first_seen: float
    last_seen: float
    seen_count: int
    source: str
    status: str


class RejectRow(NamedTuple):
    """An offered item that was not a frame, escaped and masked (table ``rejects``)."""

    ts: float
    source: str
    outcome: str
    reason: str
    frame_id: str
    frame_text: str
    file: str | None
    line: int | None


class ActivityRow(NamedTuple):
    """One verdict in the console's live feed (table ``activity``)."""

    ts: float
    source: str
    frame_id: str
    outcome: str
    reason: str
    file: str | None
    line: int | None


# Built once or twice per frame on the hot path, so without Python code (see ``_builder``).
_verdict, _seen_row, _case_row = _builder(Verdict), _builder(SeenRow), _builder(CaseRow)
_case_ref, _reject_row, _activity_row = _builder(CaseRef), _builder(RejectRow), _builder(ActivityRow)
# Named fields read in bulk (C-level getters, as fast as indexing): of verdicts, and of offers.
_outcome, _file = attrgetter("outcome"), attrgetter("file")
_row_id = itemgetter(0)  # a witness row's frame id
_last_two = itemgetter(slice(-2, None))  # a witness's crc8: the trailer's two hex digits


class Facts(NamedTuple):
    """What the store holds about a batch's frame ids and case keys (only those)."""

    seen: dict[str, str]  # frame_id -> the witness text kept for it (R2)
    quarantined: set[tuple[str, str]]  # (frame_id, text) already waiting in quarantine
    cases: dict[str, CaseRef]  # case_key -> the applied case (R11, R12)
    settled_texts: dict[str, set[str]]  # case_key -> versions an operator settled (R13)
    settled_payloads: dict[str, set[tuple]]  # case_key -> their payloads, for re-ranks of them


class Writes(NamedTuple):
    """The rows one batch adds or changes."""

    seen_rows: list[SeenRow]
    case_rows: list[CaseRow]
    reject_rows: list[RejectRow]
    activity_rows: list[ActivityRow]  # the newest verdicts only: older ones would be pruned at once
    seen_bumps: dict[str, int]  # frame_id -> retransmits counted against its stored witness
    new_quarantine: list[QuarantineRow]
    quarantine_bumps: dict[tuple[str, str], int]  # (frame_id, text) -> repeats of a queued conflict
    outcomes: Tally  # outcome name -> frames
    added_cases: int
    added_headcount: int
    folded: dict[str, int]  # frame_id -> seen_count of a new witness whose re-sends are in its row


def _masked(value, limit: int) -> str:
    """Outside text for a reject row: masked before escaping (a number cut at the limit is still
    masked whole) and after (an escape can turn a separator into one the mask knows)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return mask_phones(escape_text(value, limit))
    shown = escape_text(mask_phones(value), limit)
    if shown is value:  # neither masked nor escaped (each returns its input then): a second mask finds nothing
        return shown
    return mask_phones(shown)


def needs_facts(results: Sequence) -> list[Frame]:
    """The frames the store must be asked about: those that parsed with a good trailer (R1)."""
    return [f for f in results if f.__class__ is Frame and f.trailer_ok]


# Enum member lookups and ``.value`` are slow descriptors on the hot path: looked up once here.
_APPLIED, _DUPLICATE, _CONFLICT = Outcome.APPLIED, Outcome.DUPLICATE, Outcome.CONFLICT_QUARANTINED
_VALUE_OF = {o: o.value for o in Outcome}
_EMPTY: frozenset = frozenset()


class BatchState:
    """What one batch knows and has decided so far: the store's facts as the batch's own frames
    change them, and the rows they add (``writes``).

    Like a protocol state machine, it holds the state and ``decide`` is the one
    transition: an offer in, a verdict out, the state updated. ``decide`` is the
    receiver's hot path, so the state lives in plain attributes, not records.
    """

    def __init__(self, facts: Facts, now: float = 0.0, source: str = "api") -> None:
        self.now, self.source = now, source
        # Copies: the batch's frames are taken in here, never into the caller's facts.
        self.seen: dict[str, str] = dict(facts.seen)
        self.quarantined: set[tuple[str, str]] = set(facts.quarantined)
        self.cases: dict[str, CaseRef] = dict(facts.cases)
        self.settled_texts, self.settled_payloads = facts.settled_texts, facts.settled_payloads  # read only
        self.seen_rows: list[SeenRow] = []
        self.case_rows: list[CaseRow] = []
        self.reject_rows: list[RejectRow] = []
        self.seen_bumps: dict[str, int] = {}
        self.new_quarantine: dict[tuple[str, str], QuarantineRow] = {}
        self.quarantine_bumps: dict[tuple[str, str], int] = {}
        self.added_cases = self.added_headcount = 0
        self.folded: dict[str, int] = {}  # id of a new witness -> its count, re-sends in (``fold_resends``)
        self.verdicts: list[Verdict] = []  # in offer order
        # A file label comes from outside (a path given to `ingest`): stored escaped unless it is
        # printable ASCII already (the inbox's labels are). Every offer of one file carries the
        # same string, so it is checked once per file.
        self._raw_file = self._shown_file = None

    def decide(self, offer: Offer, parsed: Frame | Rejected | None = None) -> Verdict:
        """The verdict on one offer (``parsed`` is ``parse(offer.frame_id, offer.text)`` when
        the caller has it already), taken into the state and its rows.

        One method on purpose: it runs once per frame, and a call per step costs
        more than the step.
        """
        if parsed is None:
            parsed = parse(offer.frame_id, offer.text)
        source = self.source
        file, line = offer.file, offer.line
        if file is not None:
            if file is not self._raw_file:
                self._raw_file, self._shown_file = file, self._show_file(file)
            file = self._shown_file
        if parsed.__class__ is not Frame or not parsed.trailer_ok:
            bad = reject(parsed)
            # Not a frame, so it may carry anything, a phone number included: escaped and masked.
            shown_id = _masked(offer.frame_id, 80)
            self.reject_rows.append(_reject_row((self.now, source, _VALUE_OF[bad.outcome], bad.reason, shown_id,
                                                 _masked(offer.text, 200), file, line)))
            # A rejected id may carry anything; only its escaped form travels on.
            verdict = _verdict((shown_id, bad.outcome, bad.reason, source, file, line))
            self.verdicts.append(verdict)
            return verdict
        frame: Frame = parsed
        frame_id, ftext, key = frame.frame_id, frame.text, frame.case_key
        seen_text = self.seen.get(frame_id)
        case = self.cases.get(key)
        settled = self.settled_texts
        qkey = (frame_id, ftext)
        outcome, reason, record_seen = decide(
            frame, seen_text, case,
            settled.get(key, _EMPTY) if settled else _EMPTY,
            self.settled_payloads.get(key, _EMPTY) if settled else _EMPTY,
            qkey in self.quarantined,
        )
        now = self.now
        if record_seen:
            self.seen_rows.append(_seen_row((frame_id, ftext, ftext[-2:], now, now, 1, source)))
            self.seen[frame_id] = ftext
        elif outcome is _DUPLICATE and seen_text == ftext:
            bumps = self.seen_bumps
            bumps[frame_id] = bumps.get(frame_id, 0) + 1
        if outcome is _APPLIED:
            self.case_rows.append(_case_row((key, frame_id, ftext, frame.seq, frame.site, frame.need,
                                             frame.headcount, frame.pri, now, now, source, 1)))
            self.cases[key] = CaseRef(frame_id, ftext, frame.payload)
            self.added_cases += 1
            self.added_headcount += frame.headcount
        elif outcome is _CONFLICT:
            queued = self.new_quarantine.get(qkey)
            if queued is not None:  # queued by this batch: one row, seen once more
                self.new_quarantine[qkey] = queued._replace(seen_count=queued.seen_count + 1)
            elif qkey in self.quarantined:  # queued by an earlier batch
                self.quarantine_bumps[qkey] = self.quarantine_bumps.get(qkey, 0) + 1
            else:
                first_id, first_text = (frame_id, seen_text) if seen_text is not None else (case.frame_id, case.text)
                self.new_quarantine[qkey] = QuarantineRow(frame_id, key, ftext, first_id, first_text, reason,
                                                          now, now, 1, source, "open")
                self.quarantined.add(qkey)
        verdict = _verdict((frame_id, outcome, reason, source, file, line))
        self.verdicts.append(verdict)
        return verdict

    def decide_all(self, offers: Sequence[Offer], results: Sequence) -> list[Verdict]:
        """``decide`` for every offer in order, the receiver's fast path.

        One in-order pass decides inline the two verdicts most frames get, by
        the very tests ``decide`` makes first: a first arrival (nothing stored
        or decided under its id or case key, nothing settled on the key) and an
        exact re-send (the same text as its id's witness, on a case with
        nothing settled). Each is taken into this state as ``decide`` would
        take it (its witness text, its case, its rows), so every other frame,
        and every reject, goes through ``decide`` itself on the same state and
        the rules have one statement. The first arrivals' witness rows are
        built in bulk at the end, each with its re-sends counted in
        (``folded``); re-sends of a witness stored before the batch are bumps.
        tests/test_fast_path_differential.py holds this equal to
        ``decide_batch`` on random streams.
        """
        fresh: set[str] = set()  # ids applied inline here: their re-sends are counted in their rows
        applied_ids: list[str] = []
        applied_texts: list[str] = []
        one_file, file_at = self._shown_files(offers)
        now, source, again_get = self.now, self.source, self.folded.get
        if compiled.loops is not None and offers.__class__ is list and results.__class__ is list:
            state = (self.seen, self.cases, self.settled_texts, fresh, self.folded, self.seen_bumps, self.case_rows,
                     self.verdicts, applied_ids, applied_texts, now, source)
            heads = compiled.loops.decide_common(offers, results, one_file if file_at is None else file_at,
                                                 state, self.decide)  # ``_decide_common``, in C
        else:
            files = repeat(one_file) if file_at is None else file_at
            heads = self._decide_common(offers, results, files, fresh, applied_ids, applied_texts)
        if applied_ids:
            rows = list(map(_seen_row, zip(applied_ids, applied_texts, map(_last_two, applied_texts), repeat(now),
                                           repeat(now), map(again_get, applied_ids, repeat(1)), repeat(source))))
            rows.extend(self.seen_rows)  # then the witnesses ``decide`` recorded, as before
            self.seen_rows = rows
            self.added_cases += len(applied_ids)
            self.added_headcount += heads
        self.fold_resends()
        return self.verdicts

    def _decide_common(self, offers: Sequence[Offer], results: Sequence, files: Iterable, fresh: set[str],
                       applied_ids: list[str], applied_texts: list[str]) -> int:
        """``decide_all``'s pass: the applied frames' ids and texts into ``applied_*``, and their
        headcount returned (core/rules/_fastpath.c ``decide_common`` is this loop in C)."""
        seen, cases, settled = self.seen, self.cases, self.settled_texts
        seen_get, again = seen.get, self.folded
        again_get = again.get
        bumps = self.seen_bumps
        bumps_get = bumps.get
        fresh_add = fresh.add
        id_add, text_add = applied_ids.append, applied_texts.append
        add_case, add_verdict = self.case_rows.append, self.verdicts.append
        decide = self.decide
        now, source = self.now, self.source
        frame_class = Frame
        heads = 0
        for offer, parsed, file in zip(offers, results, files):
            if parsed.__class__ is frame_class and parsed.trailer_ok:
                # every field at once (a field added to ``Frame`` fails here, never shifts silently)
                frame_id, text, seq, site, need, headcount, pri, _trailer_ok, key = parsed
                witness = seen_get(frame_id)
                if witness is None:
                    if key not in cases and not (settled and settled.get(key)):
                        seen[frame_id] = text
                        cases[key] = _case_ref((frame_id, text, parsed.payload))
                        fresh_add(frame_id)
                        id_add(frame_id)
                        text_add(text)
                        add_case(_case_row((key, frame_id, text, seq, site, need, headcount, pri, now, now, source, 1)))
                        heads += headcount
                        add_verdict(_verdict((frame_id, _APPLIED, "new", source, file, offer.line)))
                        continue
                elif witness == text and not (settled and settled.get(key)):
                    if frame_id in fresh:
                        again[frame_id] = again_get(frame_id, 1) + 1
                    else:
                        bumps[frame_id] = bumps_get(frame_id, 0) + 1
                    add_verdict(_verdict((frame_id, _DUPLICATE, "retransmit", source, file, offer.line)))
                    continue
            decide(offer, parsed)
        return heads

    def fold_resends(self) -> None:
        """Re-sends of a witness new in this batch counted in its new row, not as a bump: the
        same row as inserting it with a count of one and adding the bumps (one clock and source
        per batch), one write instead of two. ``decide_all`` counts its own applied frames' as it
        goes (``folded``); this takes in those ``decide`` counted. Stored witnesses keep bumps."""
        bumps, rows = self.seen_bumps, self.seen_rows
        if not bumps or not rows:
            return
        extra = list(map(bumps.pop, map(_row_id, rows), repeat(0)))  # in C: 0 for a row with none
        if not any(extra):
            return
        folded = self.folded
        for i in compress(range(len(rows)), extra):
            row = rows[i]
            rows[i] = _seen_row((*row[:5], row[5] + extra[i], row[6]))
            folded[row[0]] = row[5] + extra[i]

    def _shown_files(self, offers: Sequence[Offer]) -> tuple[str | None, list | None]:
        """The file label each offer's verdict shows (as ``decide`` shows it): ``(label, None)``
        when every offer carries the same object (an inbox file's items, or none), else
        ``(None, labels by position)``."""
        files = list(map(_file, offers))
        if len(set(map(id, files))) <= 1:
            return (self._show_file(files[0]) if files else None), None
        by_object = {}
        for file in files:
            if id(file) not in by_object:
                by_object[id(file)] = self._show_file(file)
        return None, list(map(by_object.__getitem__, map(id, files)))

    def _show_file(self, file):
        if file is None:
            return None
        safe = isinstance(file, str) and file.isascii() and file.isprintable()
        return mask_phones(file if safe else escape_text(file, 200))

    @property
    def writes(self) -> Writes:
        """The rows the batch decided so far, for the store to write in one transaction."""
        now, source, verdicts = self.now, self.source, self.verdicts
        # Only the newest rows of the feed are kept, so older ones are never written.
        tail = verdicts[-ACTIVITY_KEEP:]
        activity = []
        if tail:
            ids, outcomes, reasons, _, files, lines = zip(*tail)
            activity = list(map(_activity_row, zip(repeat(now), repeat(source), ids,
                                                   map(_VALUE_OF.__getitem__, outcomes), reasons, files, lines)))
        return Writes(self.seen_rows, self.case_rows, self.reject_rows, activity, self.seen_bumps,
                      list(self.new_quarantine.values()), self.quarantine_bumps,
                      Tally(map(_VALUE_OF.__getitem__, map(_outcome, verdicts))), self.added_cases,
                      self.added_headcount, self.folded)


def decide_batch(offers: Sequence[Offer], results: Sequence, facts: Facts, now: float,
                 source: str) -> tuple[list[Verdict], Writes]:
    """Decide every offer in order (``results``: each one parsed); ``facts`` is left as it was.

    The executable specification: one ``decide`` per offer, nothing else."""
    state = BatchState(facts, now, source)
    decide_one = state.decide
    for offer, parsed in zip(offers, results):
        decide_one(offer, parsed)
    return state.verdicts, state.writes


def decide_batch_fast(offers: Sequence[Offer], results: Sequence, facts: Facts, now: float,
                      source: str) -> tuple[list[Verdict], Writes]:
    """``decide_batch`` with the common verdicts decided inline (``BatchState.decide_all``)."""
    state = BatchState(facts, now, source)
    state.decide_all(offers, results)
    return state.verdicts, state.writes


if compiled.loops is not None:
    compiled.loops.configure(Frame, CaseRef, CaseRow, Verdict, _APPLIED, _DUPLICATE)
