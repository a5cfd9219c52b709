"""The rules R1-R13 as tables over the pure decision, with no store at all.

Like h11 testing its state machine directly: each row names the rule, what the
store would know, and the outcome. ``decide`` judges one frame; ``BatchState``
(and ``decide_batch`` over it) judges a chunk in order, which is where R6, R8, R9
and R10 show.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from core.rules.batch import BatchState, Facts, Offer, QuarantineRow, decide_batch, decide_batch_fast
from core.rules.decide import CaseRef, Outcome, decide, payload_from_key, payload_key, reject
from core.rules.frame import Frame, Rejected, parse
from core.rules.retention import DAY, RetentionError, check_retention
from tests.support.helpers import bad_trailer, frame

A1 = frame(1, "Kakuma1", "MED", 3, 86)  # the first version of case A, pack rank 1
A1_MORE = frame(1, "Kakuma1", "MED", 5, 86)  # a corrected headcount
A2_SAME = frame(2, "Kakuma1", "MED", 3, 86)  # re-ranked: same payload, pack rank 2
A2_OTHER = frame(2, "Kakuma1", "MED", 9, 86)  # re-ranked with another payload
CASE_A = CaseRef("A-1", A1, ("Kakuma1", "MED", 3, 86))


def good(frame_id: str, text: str) -> Frame:
    parsed = parse(frame_id, text)
    assert isinstance(parsed, Frame) and parsed.trailer_ok, parsed
    return parsed


def no_facts() -> Facts:
    return Facts({}, set(), {}, {}, {})


# rule, frame id, frame, what the store knows, outcome, reason, a witness is written
DECIDE = [
    ("R2 a new id applies", "A-1", A1, {}, Outcome.APPLIED, "new", True),
    ("R2 an opaque id is its own case", "rec1", A1, {}, Outcome.APPLIED, "new", True),
    ("R3 same id, same frame", "A-1", A1, {"seen_text": A1, "case": CASE_A}, Outcome.DUPLICATE, "retransmit", False),
    ("R4 a retransmit after a session drop is a duplicate", "A-1", A1[:-2] + A1[-2:].upper() + "\r\n",
     {"seen_text": A1, "case": CASE_A}, Outcome.DUPLICATE, "retransmit", False),
    ("R5 same id, other frame", "A-1", A1_MORE, {"seen_text": A1, "case": CASE_A},
     Outcome.CONFLICT_QUARANTINED, "same_frame_id_different_payload", False),
    ("R5 the same newcomer again", "A-1", A1_MORE, {"seen_text": A1, "case": CASE_A, "quarantined": True},
     Outcome.CONFLICT_QUARANTINED, "already_quarantined", False),
    ("R11 witness evicted, case kept, same frame", "A-1", A1, {"case": CASE_A},
     Outcome.DUPLICATE, "after_eviction", True),
    ("R11 witness evicted, case kept, other frame", "A-1", A1_MORE, {"case": CASE_A},
     Outcome.CONFLICT_QUARANTINED, "same_frame_id_different_payload", False),
    ("R12 re-rank with the same payload", "A-2", A2_SAME, {"case": CASE_A}, Outcome.DUPLICATE, "rerank", True),
    ("R12 re-rank with another payload", "A-2", A2_OTHER, {"case": CASE_A},
     Outcome.CONFLICT_QUARANTINED, "same_case_different_payload", False),
    ("R13 the settled newcomer again", "A-1", A1_MORE,
     {"seen_text": A1, "case": CASE_A, "settled_texts": {A1, A1_MORE},
      "settled_payloads": {("Kakuma1", "MED", 3, 86), ("Kakuma1", "MED", 5, 86)}},
     Outcome.DUPLICATE, "resolved_earlier", False),
    ("R13 a re-rank of a settled version", "A-3", frame(3, "Kakuma1", "MED", 5, 86),
     {"case": CASE_A, "settled_texts": {A1, A1_MORE},
      "settled_payloads": {("Kakuma1", "MED", 3, 86), ("Kakuma1", "MED", 5, 86)}},
     Outcome.DUPLICATE, "resolved_earlier", False),
    ("R13 a new version after a settlement is a conflict again", "A-1", frame(1, "Kakuma1", "MED", 7, 86),
     {"seen_text": A1, "case": CASE_A, "settled_texts": {A1, A1_MORE}},
     Outcome.CONFLICT_QUARANTINED, "same_frame_id_different_payload", False),
]


@pytest.mark.parametrize("rule, frame_id, text, known, outcome, reason, witness", DECIDE, ids=[r[0] for r in DECIDE])
def test_decide(rule, frame_id, text, known, outcome, reason, witness):
    assert tuple(decide(good(frame_id, text), **known)) == (outcome, reason, witness)


# R1: a reject is judged before any dedup state, in the parser's order.
REJECTS = [
    ("bad id before anything else", "bad id!", "garbage", "bad_frame_id"),
    ("grammar", "A-1", "H1|1|Kakuma1|MED|3|#89", "bad_grammar"),
    ("not ASCII", "A-1", "H1|١|Kakuma1|MED|3|86|#89", "not_ascii"),
    ("too long", "A-1", "H1|1|" + "K" * 80 + "|MED|3|86|#89", "too_long"),
    ("the id's rank must be the frame's seq", "A-2", A1, "id_seq_mismatch"),
]


@pytest.mark.parametrize("what, frame_id, text, reason", REJECTS, ids=[r[0] for r in REJECTS])
def test_r1_format_rejects_come_in_parse_order(what, frame_id, text, reason):
    parsed = parse(frame_id, text)
    assert parsed == Rejected(reason)
    assert tuple(reject(parsed)) == (Outcome.REJECT_BAD_FORMAT, reason, False)


def test_r1_a_bad_trailer_is_rejected_and_leaves_no_state_so_a_good_copy_applies():
    verdicts, writes = decide_batch([Offer("A-1", bad_trailer(A1)), Offer("A-1", A1)],
                                    [parse("A-1", bad_trailer(A1)), parse("A-1", A1)], no_facts(), 0.0, "api")
    assert [(v.outcome, v.reason) for v in verdicts] == [(Outcome.REJECT_BAD_CRC, "bad_trailer"), (Outcome.APPLIED, "new")]
    assert len(writes.reject_rows) == 1 and len(writes.seen_rows) == 1


def run(items, facts=None):
    offers = [Offer(fid, text) for fid, text in items]
    return decide_batch(offers, [parse(o.frame_id, o.text) for o in offers], facts or no_facts(), 100.0, "api")


def test_r6_any_order_and_any_subset():
    session = [("B-3", frame(3, "Dadaab", "WAT", 12, 50)), ("D-1", frame(1, "Dadaab", "SHE", 8, 70))]
    verdicts, writes = run(session)
    assert [v.outcome for v in verdicts] == [Outcome.APPLIED, Outcome.APPLIED]
    assert writes.added_headcount == 20


def test_r8_every_applied_case_comes_with_its_witness_in_the_same_writes():
    verdicts, writes = run([("A-1", A1), ("C-1", frame(1, "Ifo", "FOO", 4, 10))])
    assert [row.frame_id for row in writes.seen_rows] == [row.frame_id for row in writes.case_rows] == ["A-1", "C-1"]


def test_r9_a_resent_session_is_counted_once():
    session = [("S-1", frame(1, "Kakuma1", "MED", 3, 90)), ("T-2", frame(2, "Kakuma1", "SHE", 8, 80)),
               ("U-3", frame(3, "Kakuma1", "WAT", 12, 70))]
    verdicts, writes = run(session + session + session[2:])
    assert writes.added_headcount == 23 and writes.added_cases == 3
    assert writes.outcomes == {"APPLIED": 3, "DUPLICATE": 4}
    assert writes.seen_bumps == {"S-1": 1, "T-2": 1, "U-3": 2}


def test_r9_a_batch_counts_the_resends_of_its_own_new_witnesses_in_their_rows():
    """The fast path writes a new witness with its re-sends in its count (one row, no update after),
    as the reference's row plus its bumps; a witness stored before the batch keeps its bump. Both
    kinds of new witness: a first arrival's, and a re-rank's (recorded by ``decide``)."""
    old, s1, s2 = frame(1, "Ifo", "FOO", 4, 10), frame(1, "Kakuma1", "MED", 3, 90), frame(2, "Kakuma1", "MED", 3, 90)
    offers = [Offer(*pair) for pair in [("S-1", s1), ("S-1", s1), ("OLD-1", old), ("S-2", s2), ("S-2", s2), ("S-1", s1)]]
    facts = Facts({"OLD-1": old}, set(), {"rec:OLD": CaseRef("OLD-1", old, parse("OLD-1", old).payload)}, {}, {})
    parsed = [parse(o.frame_id, o.text) for o in offers]
    reference, fast = (way(offers, parsed, facts, 100.0, "api") for way in (decide_batch, decide_batch_fast))
    assert reference[0] == fast[0]
    assert [v.reason for v in fast[0]] == ["new", "retransmit", "retransmit", "rerank", "retransmit", "retransmit"]
    assert [(r.frame_id, r.seen_count) for r in reference[1].seen_rows] == [("S-1", 1), ("S-2", 1)]
    assert reference[1].seen_bumps == {"S-1": 2, "OLD-1": 1, "S-2": 1}
    assert [(r.frame_id, r.seen_count) for r in fast[1].seen_rows] == [("S-1", 3), ("S-2", 2)]
    assert fast[1].seen_bumps == {"OLD-1": 1} and fast[1].folded == {"S-1": 3, "S-2": 2}


def test_r10_a_conflict_is_queued_never_dropped():
    verdicts, writes = run([("A-1", A1), ("A-1", A1_MORE), ("A-1", A1_MORE)])
    assert [v.reason for v in verdicts] == ["new", "same_frame_id_different_payload", "already_quarantined"]
    assert verdicts[1].alert and not verdicts[2].alert
    (queued,) = writes.new_quarantine
    assert (queued.frame_id, queued.case_key, queued.frame_text, queued.first_frame_id, queued.first_text) == (
        "A-1", "rec:A", A1_MORE, "A-1", A1)
    assert queued.seen_count == 2  # seen twice, queued once
    assert queued == QuarantineRow("A-1", "rec:A", A1_MORE, "A-1", A1, "same_frame_id_different_payload",
                                   100.0, 100.0, 2, "api", "open")


def test_the_batch_state_takes_its_frames_in_without_changing_the_store_facts():
    facts = Facts({"A-1": A1}, set(), {"rec:A": CASE_A}, {}, {})
    before = (dict(facts.seen), set(facts.quarantined), dict(facts.cases))
    state = BatchState(facts, now=100.0, source="api")
    verdicts = [state.decide(Offer(fid, text)) for fid, text in
                [("C-1", frame(1, "Ifo", "FOO", 4, 10)), ("C-1", frame(1, "Ifo", "FOO", 4, 10)), ("A-1", A1_MORE)]]
    assert [v.reason for v in verdicts] == ["new", "retransmit", "same_frame_id_different_payload"]
    assert (facts.seen, facts.quarantined, facts.cases) == before
    assert state.seen["C-1"] and ("A-1", A1_MORE) in state.quarantined and "rec:C" in state.cases
    # the same facts decide a second batch as if the first had never been offered
    assert BatchState(facts).decide(Offer("C-1", frame(1, "Ifo", "FOO", 4, 10))).reason == "new"


def test_an_offer_keeps_its_file_and_line_and_a_hostile_label_is_escaped():
    state = BatchState(no_facts(), now=5.0, source="cli")
    ok = state.decide(Offer("A-1", A1, "feed.txt", 3))
    bad = state.decide(Offer("B-1", "junk", "a\x1b[2Jb.txt", 4))
    assert (ok.file, ok.line, bad.file, bad.line) == ("feed.txt", 3, "a\\x1b[2Jb.txt", 4)
    assert [(r.frame_id, r.file, r.line) for r in state.writes.activity_rows] == [("A-1", "feed.txt", 3),
                                                                                   ("B-1", bad.file, 4)]
    (rejected,) = state.writes.reject_rows
    assert (rejected.outcome, rejected.file, rejected.line, rejected.ts, rejected.source) == (
        "REJECT_BAD_FORMAT", bad.file, 4, 5.0, "cli")


def test_r7_retention_floor_and_signed_exception():
    assert check_retention(30 * DAY, signed=False) is False
    assert check_retention(10 * DAY, signed=True) is True
    with pytest.raises(RetentionError, match="needs an operator-signed exception"):
        check_retention(10 * DAY, signed=False)
    with pytest.raises(RetentionError, match="floor is 72 hours"):
        check_retention(71 * 3600, signed=True)


def test_r13_the_settlement_key_reads_back_what_it_wrote():
    payload = ("Kakuma1", "MED", 3, 86)
    assert payload_from_key(payload_key(payload)) == payload
    assert payload_key(payload) == "Kakuma1|MED|3|86"  # stored in settlements: never change the format


def _positional_reads(tree) -> list[int]:
    """Lines reading a tuple's field by a number (``parsed[7]``) or a fixed slice (``frame[3:7]``)."""
    def number(node) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, int)

    return sorted(node.lineno for node in ast.walk(tree) if isinstance(node, ast.Subscript) and (
        number(node.slice) or isinstance(node.slice, ast.Slice) and (number(node.slice.lower) or number(node.slice.upper))))


def test_the_fast_path_reads_frames_and_verdicts_by_name_not_by_position():
    """``decide_all`` names each field it reads (``parsed.trailer_ok``, not ``parsed[7]``), so a
    field added to ``Frame`` or ``Verdict`` cannot silently shift what it reads."""
    found = _positional_reads(ast.parse(textwrap.dedent(inspect.getsource(BatchState.decide_all))))
    assert not found, f"decide_all reads by position at its lines {found}"
    sample = "x = parsed[7]\ny = frame[3:7]\nz = d['key']\nrows = rows[first:]\n"
    assert _positional_reads(ast.parse(sample)) == [1, 2]  # the check sees both forms
