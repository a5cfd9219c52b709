"""Grammar, bounds, identity, canonical form, and the prototype's faults, each kept out (docs/rules.md)."""

import pytest

from core.rules.frame import Frame, Rejected, canonical, case_key, parse
from core.rules.text import escape_text
from tests.support.helpers import frame

GOOD = "H1|1|Kakuma1|MED|3|86|#89"


def test_good_frame_parses():
    f = parse("rec1", GOOD)
    assert isinstance(f, Frame) and f.trailer_ok
    assert (f.seq, f.site, f.need, f.headcount, f.pri) == (1, "Kakuma1", "MED", 3, 86)
    assert f.case_key == "id:rec1"


@pytest.mark.parametrize("text", [GOOD + "\r\n", GOOD + "\n", "  " + GOOD + "\t", GOOD + "\r"])
def test_line_endings_and_space_are_not_part_of_the_frame(text):
    """A CRLF line is a frame, and no line ending or surrounding space is stored as part of it."""
    f = parse("rec1", text)
    assert isinstance(f, Frame) and f.trailer_ok
    assert f.text == GOOD


def test_upper_case_trailer_is_the_same_frame():
    """'#1A' and '#1a' are one trailer, so the same frame in either case is never a conflict."""
    f = parse("rec3", "H1|3|Kakuma1|WAT|12|69|#1A")
    assert f.trailer_ok and f.text == "H1|3|Kakuma1|WAT|12|69|#1a"
    assert canonical("H1|3|Kakuma1|WAT|12|69|#1A\r\n") == "H1|3|Kakuma1|WAT|12|69|#1a"


@pytest.mark.parametrize(
    "text,reason",
    [
        ("H1|9|Kakuma1|MED|3", "bad_grammar"),
        ("H1|1|Kakuma1|MED|" + "9" * 25 + "|86|#00", "bad_grammar"),  # a 25-digit headcount is out of bounds, never an overflow
        ("H1|\u0661|Kakuma1|MED|3|86|#89", "not_ascii"),  # an Arabic-Indic digit is not a number
        ("H1|\uff11|Kakuma1|MED|3|86|#89", "not_ascii"),  # full-width digit
        ("H1|1|Kakuma1|MED|3|86|#89\x00", "not_ascii"),
        ("H1|1|Kak\x1b[2Juma|MED|3|86|#89", "not_ascii"),
        ("H1|12345|Kakuma1|MED|3|86|#89", "bad_grammar"),
        ("H1|1|Kakuma123|MED|3|86|#89", "bad_grammar"),
        ("H1|1|Kakuma1|med|3|86|#89", "bad_grammar"),
        ("H1|1|Kakuma1|MED|1234567|86|#89", "bad_grammar"),
        ("H1|1|Kakuma1|MED|3|8600|#89", "bad_grammar"),
        ("H1|1|Kakuma1|MED|3|86|#8", "bad_grammar"),
        ("H2|1|Kakuma1|MED|3|86|#89", "bad_grammar"),
        ("", "bad_grammar"),
        ("x" * 10_000, "too_long"),
    ],
)
def test_format_rejects(text, reason):
    assert parse("rec1", text) == Rejected(reason)


@pytest.mark.parametrize("frame_id", ["", "a" * 65, "has space", "bad/slash", "ü", None, 12])
def test_bad_frame_ids(frame_id):
    assert parse(frame_id, GOOD) == Rejected("bad_frame_id")


def test_non_string_text_is_a_reject_not_a_crash():
    assert parse("rec1", None) == Rejected("bad_grammar")
    assert parse("rec1", b"H1") == Rejected("bad_grammar")


def test_id_seq_rule():
    assert parse("A7f3-1", frame(1, "Dadaab2", "WAT", 40, 77)).case_key == "rec:A7f3"
    assert parse("A7f3-3", frame(1, "Dadaab2", "WAT", 40, 77)) == Rejected("id_seq_mismatch")
    assert parse("A7f3-01", frame(1, "Dadaab2", "WAT", 40, 77)).trailer_ok
    # an id without a trailing -<digits> is an opaque key
    assert parse("rec1", frame(4, "X", "FOO", 1, 1)).case_key == "id:rec1"
    assert case_key("a-b-12") == "rec:a-b" and case_key("-5") == "id:-5"


def test_bad_trailer_is_well_formed_but_not_ok():
    f = parse("rec9", "H1|1|Kakuma1|MED|3|86|#00")
    assert isinstance(f, Frame) and not f.trailer_ok


def test_escape_text_leaves_no_control_characters():
    shown = escape_text("[bold]x\x1b[2J\x07\x9b\u202e\\", 200)
    assert shown.isascii() and shown.isprintable()
    assert "\x1b" not in shown and "\\x1b" in shown
    assert len(escape_text("y" * 1000, 50)) <= 60
