"""Fuzzing: no input raises and every line gets exactly one outcome.

Bounded under `make test`; `make fuzz` runs the same properties much longer
(HYPOTHESIS_PROFILE=fuzz).
"""

import string

from hypothesis import given
from hypothesis import strategies as st

from core import Outcome, Receiver
from core.rules.formats import plain_lines
from core.rules.frame import Frame, Rejected, canonical, parse
from tests.support.helpers import frame

FRAME_CHARS = string.ascii_letters + string.digits + "|#-._: \t\r\n" + "\x00\x1b\u0661\uff11é"

framelike = st.builds(
    lambda seq, site, need, hc, pri: frame(seq, site, need, hc, pri),
    st.integers(0, 9999), st.text("abcXYZ019", min_size=1, max_size=8),
    st.text(string.ascii_uppercase, min_size=3, max_size=3), st.integers(0, 999999), st.integers(0, 999),
)
mutated = st.tuples(framelike, st.integers(0, 40), st.sampled_from(FRAME_CHARS)).map(
    lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + 1:]
)
texts = st.one_of(st.text(FRAME_CHARS, max_size=60), framelike, mutated, st.text(max_size=100))
ids = st.one_of(st.from_regex(r"[A-Za-z0-9._:-]{1,64}", fullmatch=True), st.text(max_size=70),
                framelike.map(lambda f: "r-" + f.split("|")[1]))


@given(ids, texts)
def test_parser_never_raises_and_is_consistent(fid, text):
    result = parse(fid, text)
    assert isinstance(result, (Frame, Rejected))
    if isinstance(result, Frame):
        assert result.text == canonical(text)
        assert result.text.isascii() and result.text.isprintable()
        assert parse(fid, result.text) == result  # canonical form is a fixed point


@given(st.text(max_size=2000))
def test_plain_reader_and_ingest_give_one_outcome_per_item(blob):
    items = list(plain_lines(blob))
    with Receiver(":memory:") as r:
        verdicts = r.ingest_many([(f, t, "fuzz.txt", n) for f, t, n in items], now=1_700_000_000)
    assert len(verdicts) == len(items)
    for v in verdicts:
        assert isinstance(v.outcome, Outcome)
        assert v.frame_id.isascii() and v.frame_id.isprintable()  # safe to show as it is
