"""Fuzzing the inbox readers and the whole delivery path: no input raises, every
record (CSV) or line (JSON lines) gets exactly one item, and a delivered file gives exactly
one outcome per item, or is rejected whole with a reason.

Bounded under `make test`; `make fuzz` (HYPOTHESIS_PROFILE=fuzz) runs them far longer.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
import os
import string

import pytest
from hypothesis import HealthCheck, event, example, given
from hypothesis import strategies as st

from core import Outcome, Receiver
from core.config import InboxConfig
from core.rules.formats import FormatError, read_items
from core.rules.scrub import scrub
from core.rules.text import escape_text
from core.home import Home
from core.inbox import claimed_dir, deliver, prepare_home
from tests.support.helpers import bad_trailer, frame
from tests.support.hypothesis_settings import examples

SPACE = " \t\r\n\x0b\x0c"
CONTROL = "".join(chr(c) for c in range(1, 32)) + "\x7f\x9b"
CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")  # what makes a line a control_byte reject

frames = st.builds(lambda seq, hc, pri: frame(seq, "Kakuma1", "MED", hc, pri),
                   st.integers(1, 9), st.integers(1, 999), st.integers(1, 999))
ids = st.one_of(st.from_regex(r"[a-z]{1,3}[0-9]{0,2}-[1-9]", fullmatch=True),
                st.text(alphabet=st.characters(codec="utf-8", blacklist_characters="\x00"), max_size=12))
cells = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", blacklist_characters="\x00"), max_size=30),
    st.text(alphabet='",;\r\n\t ab|#H1' + CONTROL.replace("\x00", ""), max_size=20),
    frames,
    st.tuples(ids, frames).map(lambda t: f"{t[0]} {t[1]}"),
)


_receivers: list[Receiver] = []


def _memory() -> Receiver:
    """One in-memory store for the reader properties: a fresh schema per example costs more than the test."""
    if not _receivers:
        _receivers.append(Receiver(":memory:"))
    return _receivers[0]


def _blank(record: str) -> bool:
    """A record the reader skips: every field is blank."""
    [row] = csv.reader([line + "\n" for line in record.split("\n")[:-1]], strict=True)
    return all(not field.strip(SPACE) for field in row)


def _start_lines(records: list[str]) -> list[int]:
    """The line each written record starts on, counting ``\\n`` like the readers do."""
    starts, line = [], 1
    for record in records:
        starts.append(line)
        line += record.count("\n")
    return starts


# Python's csv writer leaves a bare CR unquoted, which no strict reader takes back; what a reader
# makes of such unreadable text is the next test's business.
written_cells = cells.map(lambda cell: cell.replace("\r", ""))


@examples(150, fuzz=4000)
@given(st.lists(st.lists(written_cells, min_size=1, max_size=6), max_size=25),
       st.sampled_from(["message", "frame", "text", "body"]), st.booleans())
def test_csv_reader_gives_every_written_record_exactly_one_item(rows, text_column, crlf):
    header = ["id", "sender", text_column]
    records = []
    for row in [header, *rows]:
        out = io.StringIO()
        csv.writer(out, lineterminator="\r\n" if crlf else "\n").writerow(row)
        records.append(out.getvalue())
    data = "".join(records).encode()
    items, fmt = read_items("export.csv", data)
    assert fmt == "csv"
    starts = _start_lines(records)[1:]
    written = [start for start, record in zip(starts, records[1:]) if not _blank(record)]
    assert [line for _fid, _text, line in items] == written
    for fid, text, _line in items:
        assert fid is None or isinstance(fid, str)
        assert text is None or isinstance(text, str)


@examples(150, fuzz=4000)
@given(st.text(alphabet=st.characters(codec="utf-8", blacklist_characters="\x00"), max_size=400), st.booleans())
def test_csv_reader_never_raises_on_broken_csv(body, with_header):
    data = (("id,message\n" if with_header else "") + body).encode()
    try:
        items, _fmt = read_items("broken.csv", data)
    except FormatError:
        return  # the whole file is rejected with the reason
    lines = [line for _fid, _text, line in items]
    # At most one item per line, in order: a record the reader cannot take gives a reject on the
    # line it started, and reading goes on at the next line.
    assert lines == sorted(set(lines))
    assert all(1 <= line <= body.count("\n") + 2 for line in lines)
    assert len(_memory().ingest_many([(f, t, "broken.csv", n) for f, t, n in items])) == len(items)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20), frames),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)
json_objects = st.fixed_dictionaries(
    {}, optional={"frame_id": st.one_of(ids, st.integers(), st.none()), "frame": st.one_of(frames, json_values),
                  "text": st.one_of(st.tuples(ids, frames).map(" ".join), json_values), "msisdn": st.just("+254700000000"),
                  "id": st.one_of(st.integers(), ids)})
json_lines = st.one_of(
    json_objects.map(json.dumps),
    json_values.map(json.dumps),
    st.text(alphabet=st.characters(codec="utf-8", blacklist_characters="\x00\n"), max_size=40),
)


@examples(150, fuzz=4000)
@given(st.lists(json_lines, max_size=25))
def test_json_lines_reader_gives_every_line_exactly_one_item(lines):
    data = "\n".join(lines).encode()
    try:
        items, fmt = read_items("feed.jsonl", data)
    except FormatError:  # rejected whole only when no line can be read at all
        assert all(CONTROL_RE.search(line) for line in lines if line.strip(SPACE))
        return
    assert fmt == "jsonl"
    expected = [n for n, line in enumerate(lines, start=1) if line.strip(SPACE)]
    assert [line for _fid, _text, line in items] == expected
    verdicts = _memory().ingest_many([(f, t, "feed.jsonl", n) for f, t, n in items])
    assert [v.line for v in verdicts] == expected
    assert all(isinstance(v.outcome, Outcome) and v.frame_id.isascii() and v.frame_id.isprintable()
               for v in verdicts)


# -- the whole delivery path ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_inbox(tmp_path_factory):
    home = Home(tmp_path_factory.mktemp("fuzz") / "home").ensure()
    prepare_home(home)
    with Receiver(str(home.db)) as r:
        yield home, r, itertools.count()


frame_line = st.tuples(ids, frames, st.sampled_from(["ok", "ok", "crc", "upper", "crlf"])).map(
    lambda t: f"{t[0]} {bad_trailer(t[1]) if t[2] == 'crc' else t[1].upper() if t[2] == 'upper' else t[1]}"
    + ("\r" if t[2] == "crlf" else ""))
text_bodies = st.lists(st.one_of(frame_line, frame_line, json_lines, st.text(max_size=30)), max_size=30).map(
    lambda lines: "\n".join(lines).encode())
bodies = st.one_of(text_bodies, st.binary(max_size=300), text_bodies.map(lambda b: b"\xef\xbb\xbf" + b),
                   st.lists(st.lists(cells, min_size=1, max_size=4), max_size=10).map(
                       lambda rows: "\n".join(["id,message", *(",".join(r) for r in rows)]).encode()))
names = st.tuples(st.text(alphabet=st.characters(codec="utf-8", blacklist_characters="/\x00", max_codepoint=0x2FFF), max_size=20),
                  st.sampled_from(["", ".txt", ".csv", ".jsonl", ".txt", ".csv", ".jsonl", ".json", ".TXT", ".part"]))


@examples(60, fuzz=1500, suppress_health_check=[HealthCheck.too_slow])
@given(names, bodies)
# A JSON header of many odd keys: its "no frame or text column" reason runs past 300 characters.
@example(name=("", ".csv"), body=json.dumps({f"\u001f{k}\u0007": None for k in range(40)}).encode())
@example(name=(".TMP", ""), body=b"")  # found by make fuzz: a temporary name made by the stem, in capitals
def test_deliver_gives_each_item_one_outcome_or_rejects_the_file_whole(fuzz_inbox, name, body):
    home, r, counter = fuzz_inbox
    stem, ext = name
    filename = f"{next(counter):05d}{stem}{ext}"
    if len(os.fsencode(filename)) > 200:
        filename = f"{next(counter):05d}{ext}"
    path = home.inbox / filename
    path.write_bytes(body)
    os.utime(path, (0, 0))  # settled long ago
    before = r.totals().frames
    result = deliver(path, "sweep", r, home, InboxConfig(settle_time=0.5))
    event(f"{result.status} {result.format or ''}")
    assert not any(ch in result.name for ch in CONTROL)
    if filename.lower().endswith((".tmp", ".part", ".partial")):  # a writer's temporary name, any case
        assert (result.status, result.reason) == ("skipped", "temporary name")
        path.unlink()
        return
    assert not path.exists() and not [p for p in claimed_dir(home).iterdir()]  # taken, nothing left behind
    try:
        items, _fmt = read_items(filename, body)
    except FormatError as exc:
        # The reason kept and shown is escaped and bounded (300 characters), however long the header was.
        assert result.status == "rejected" and result.reason == escape_text(str(exc), 300)
        assert (result.archived.parent, result.archived.read_bytes()) == (home.rejected, scrub(filename, body))
        assert r.totals().frames == before
        return
    assert result.status == "done", result
    assert len(result.verdicts) == len(items) == r.totals().frames - before
    assert [v.line for v in result.verdicts] == [line for _f, _t, line in items]
    assert result.archived.parent.parent == home.processed
