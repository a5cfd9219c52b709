"""No phone number at rest, however it was written: the mask itself, and a real ``watch`` over files
whose names, lines and archive copies carry numbers in the ways people write them."""

from __future__ import annotations

import re
import signal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import Receiver
from core.rules.batch import BatchState, Facts, Offer
from core.rules.privacy import MASK, RUN_BYTES, mask_phones, mask_phones_bytes
from core.rules.text import escape_text
from tests.support.helpers import frame
from tests.support.inbox_helpers import drop, every_file_under, wait_for
from tests.support.watch import Watcher

MASKED = [
    ("call 0712-34-5678 today", "call [phone] today"),  # not an ISO date: 34 is no month
    ("+254  712  345  678", MASK),  # two spaces between groups
    ("+254\t712\t345\t678", MASK),
    ("+254\xa0712\xa0345\xa0678", MASK),  # non-breaking spaces, as a contact card copies them
    ("+254\u2013712\u2013345\u2013678", MASK),  # en dashes
    ("0712.345.678", MASK),
    ("(0712) 345678", MASK),
    ("+254 (0) 712 345 678", MASK),
    ("071.234.567.890", MASK),  # dotted in four, but no address: 890 is over 255
    ("dash 0712-34-5678.csv", "dash [phone].csv"),
    ("2024-05-01 0712 345 678", "2024-05-01 [phone]"),
    ("12345678", MASK),
]
# Eight digits where a frame's site would be, in what is no frame.
NO_SITE = [
    ("x|12345678|MED|", "x|[phone]|MED|"),  # between bars, but no "H1|<seq>|" before them
    ("AH1|1|12345678|MED|3|40", "AH1|1|[phone]|MED|3|40"),  # "AH1" starts no frame
    ("H1|12345|12345678|MED|", "H1|12345|[phone]|MED|"),  # a seq has at most 4 digits
    ("H1|1|0712345678|MED|3|40|#15", "H1|1|[phone]|MED|3|40|#15"),  # ten digits are no site
]
KEPT = [
    "served 2024-05-02", "2026-12-02 01:22:33,123 INFO watching", "at 2024-05-01T12:30",
    "listening on 192.168.100.200:8080", "lod01-1 H1|1|Kakuma1|MED|3|86|#89", "1234567", "v3.11.7",
    "1\n2\n3\n4\n5\n6\n7\n8",  # a line break never joins two groups
    "ids 1,2,3,4,5,6,7,8",
    "H1|1|12345678|MED|3|40|#15", "lod01-1 H1|1234|12345678|WAT|3|86|#89",  # a site may be eight digits
]


@pytest.mark.parametrize("text, masked", MASKED + NO_SITE)
def test_a_number_written_any_usual_way_is_masked_in_text_and_in_bytes(text, masked):
    assert mask_phones(text) == masked
    assert mask_phones_bytes(text.encode()) == masked.encode()


def test_a_latin1_non_breaking_space_is_a_separator_in_bytes_too():
    assert mask_phones_bytes("ring +254\xa0712\xa0345\xa0678".encode("latin-1")) == b"ring [phone]"


@pytest.mark.parametrize("text", KEPT)
def test_dates_addresses_frames_and_short_numbers_are_kept(text):
    assert mask_phones(text) == text
    assert mask_phones_bytes(text.encode()) == text.encode()


def test_a_stream_masked_in_chunks_keeps_a_cut_number_for_the_next_chunk():
    """Every byte a number's spelling may hold is one a chunked reader carries over (core.inbox.files)."""
    for text, _ in MASKED:
        for ch in text.encode():
            if ch not in b"abcdefghijklmnopqrstuvwxyz":
                assert ch in RUN_BYTES, (text, ch)


@given(seq=st.integers(1, 9),
       site=st.one_of(st.from_regex(r"[A-Za-z0-9]{1,8}", fullmatch=True), st.from_regex(r"[0-9]{1,8}", fullmatch=True)),
       need=st.sampled_from(["MED", "SHE", "WAT", "FOO", "PRO"]), head=st.integers(1, 999_999),
       pri=st.integers(0, 99))
def test_a_frame_is_never_masked(seq, site, need, head, pri):
    text = frame(seq, site, need, head, pri)
    assert mask_phones(text) == text
    assert mask_phones(f"rec{head}-{seq} {text}") == f"rec{head}-{seq} {text}"


outside = st.one_of(st.text(max_size=60), st.sampled_from([text for text, _ in MASKED]),
                    st.sampled_from(["H1|1|Kakuma1|MED|3", "a\\b 0712 345 678", "x\x1b 0712345678", "ok-1"]))


@given(frame_id=outside, text=outside)
def test_a_reject_row_keeps_its_texts_masked_escaped_and_masked_again(frame_id, text):
    """The reject row's id and text are ``mask(escape(mask(value)))`` however the batch gets there
    (it skips the second mask of a text the first mask and the escape both left as it was)."""
    state = BatchState(Facts({}, set(), {}, {}, {}), 1.0, "api")
    state.decide(Offer(frame_id, text))
    for row in state.reject_rows:
        assert row.frame_id == mask_phones(escape_text(mask_phones(frame_id), 80))
        assert row.frame_text == mask_phones(escape_text(mask_phones(text), 200))


def _digits_of(data: bytes) -> str:
    """The text with every separator a number may carry taken out, so any spelling shows its digits."""
    return re.sub(r"[\s.()\-\u2010-\u2015]", "", data.decode("utf-8", "replace"))


def test_watch_keeps_no_dashed_dotted_or_spaced_number_in_names_lines_copies_or_the_log(home, tmp_path):
    good = frame(1, "Kakuma1", "MED", 3, 86)
    watcher = Watcher(home, tmp_path)
    drop(home, "dash 0712-34-5678.csv", f"frame_id,frame,notes\ndd01-1,{good},ring 0712-34-5678\n")
    drop(home, "nbsp.csv", f"frame_id,frame,notes\nnb01-1,{frame(1, 'Ifo2', 'SHE', 4, 70)},"
                           "ring +254\xa0733\xa0000\xa0111\n")
    drop(home, "lines.txt", "dd02-1 call 0712.345.678 or +254  722  444  555\n"
                            "h-1 +254\t733\t000\t111\n"
                            "b-1 (0722) 444555\n"
                            f"ok01-1 {frame(1, 'Dadaab1', 'WAT', 9, 40)}\n")
    wait_for(lambda: len([p for p in home.processed.rglob("*") if p.is_file()]) == 3, what="the three files archived")
    assert watcher.signal(signal.SIGTERM) == 0
    with Receiver(str(home.db)) as r:
        assert r.totals().applied == 3 and r.totals().rejects == 3
        assert all(MASK in x.frame_text for x in r.rejects())
    traces = ["712345678", "733000111", "722444555"]
    found = []
    for path in every_file_under(home.root):
        if "staging" in path.parts:
            continue
        digits = _digits_of(path.read_bytes()) + " " + _digits_of(str(path.relative_to(home.root)).encode())
        found += [(str(path.relative_to(home.root)), t) for t in traces if t in digits]
    assert found == []
    assert "Traceback" not in watcher.stderr()
