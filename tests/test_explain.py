"""Plain words for a rejected line (core/rules/explain.py): what exactly was wrong."""

import pytest

from core.rules.cksum import trailer
from core.rules.decide import reject
from core.rules.explain import OUTCOME_WORDS, REASON_WORDS, explain_reject
from core.rules.frame import parse


@pytest.mark.parametrize("frame_id, text, expected", [
    ("kak05-1", "H1|1|Kakuma1|MED|3", "expected 7 fields, got 5"),
    ("kak05-1", "H1|1|Kakuma1|MEDX|3|86|#89", "need must be 3 capital letters, got 'MEDX'"),
    ("kak05-1", "H2|1|Kakuma1|MED|3|86|#89", "version must be H1, got 'H2'"),
    ("kak05-1", "H1|1|Kakuma1|MED|abc|86|#89", "people must be 1-6 digits, got 'abc'"),
    ("kak05-1", "H1|1||MED|3|86|#89", "site is empty"),
    ("kak01-2", "H1|1|Kakuma1|MED|3|86|#89", "frame id ends in -2, frame says place 1"),
    ("bad id!", "H1|1|Kakuma1|MED|3|86|#89", "frame id 'bad id!' is not 1-64 letters, digits or . _ : -"),
    ("k-1", "H1|1|Kakuma1|MED|3|86|#89" + "9" * 60, "85 characters; a frame has at most 64"),
])
def test_each_reject_says_what_was_wrong(frame_id, text, expected):
    decision = reject(parse(frame_id, text))
    assert decision is not None  # each is a real reject of the rules, not a made-up reason
    assert explain_reject(frame_id, text, decision.reason) == expected


def test_a_bad_checksum_names_both_numbers():
    body = "H1|1|Kakuma1|MED|3|86"
    good = trailer(body)
    wrong = "70" if good != "70" else "71"
    text = f"{body}|#{wrong}"
    assert reject(parse("kak01-1", text)).reason == "bad_trailer"
    assert explain_reject("kak01-1", text, "bad_trailer") == f"checksum says #{good}, frame says #{wrong}"
    assert good == "89"  # the issue's own example: "checksum says #89" for this body


def test_every_code_has_plain_words():
    from core.rules import decide

    reasons = {d.reason for d in vars(decide).values() if isinstance(d, decide.Decision)}
    assert reasons <= set(REASON_WORDS)
    assert {o.value for o in decide.Outcome} == set(OUTCOME_WORDS)
    for words in (*REASON_WORDS.values(), *OUTCOME_WORDS.values()):
        assert "_" not in words
