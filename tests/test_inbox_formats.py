"""Reading inbox files: plain text, gateway CSV exports, JSON lines, and the archive scrub."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.rules.columns import ColumnNames, is_phone_name, looks_like_phone
from core.rules.formats import FormatError, complete_part, line_count, read_items
from core.rules.scrub import scrub
from tests.support.helpers import frame
from tests.support.hypothesis_settings import examples

F1 = frame(1, "Kakuma1", "MED", 3, 86)
F2 = frame(2, "Kakuma2", "SHE", 8, 71)
F3 = frame(3, "Kakuma1", "WAT", 12, 69)
PHONES = ["+254712345678", "+254700000002", "0712 345 679"]


def why(item) -> str | None:
    """The reason a reader gave an item it could not read (its text is an ``Unreadable``)."""
    return getattr(item[1], "reason", None)


def test_plain_text_separators_blank_and_comment_lines():
    data = f"# session 1\nkak01-1 {F1}\n\nkak02-2\t{F2}\r\nkak03-3,{F3}\nlonely\n".encode()
    items, fmt = read_items("s.txt", data)
    assert fmt == "plain"
    assert items == [("kak01-1", F1, 2), ("kak02-2", F2, 4), ("kak03-3", F3, 5), ("lonely", None, 6)]


def test_csv_with_bom_crlf_and_a_phone_column_yields_no_phone_numbers():
    rows = [f"{i},{PHONES[i - 1]},kak0{i}-{i} {f}" for i, f in ((1, F1), (2, F2), (3, F3))]
    data = ("\ufeffid,Sender,Message\r\n" + "\r\n".join(rows) + "\r\n").encode("utf-8")
    items, fmt = read_items("export.csv", data)
    assert fmt == "csv"
    # The message carries the sender's frame id; the gateway's own `id` is new on every re-send.
    assert items == [("kak01-1", F1, 2), ("kak02-2", F2, 3), ("kak03-3", F3, 4)]
    assert not any(p.replace(" ", "") in repr(items).replace(" ", "") for p in PHONES)


def test_csv_frame_id_column_wins_and_a_gateway_message_id_is_never_a_frame_id():
    data = f"frame_id,msisdn,text\nkak01-1,+254712345678,{F1}\n".encode()
    assert read_items("a.csv", data)[0] == [("kak01-1", F1, 2)]
    # A gateway gives every SMS a new message id: a re-sent frame keyed on it would count twice.
    for header in ("message_id;from;body", "id;from;body", "sid;from;body", "uuid;from;body"):
        items, _ = read_items("b.csv", f"{header}\nkak02-2;+254712345678;{F2}\n".encode())
        assert items == [(None, F2, 2)] and why(items[0]) == "no_frame_id", header


def test_a_site_names_its_own_frame_id_text_and_phone_columns():
    site = ColumnNames.of(frame_id=["ref"], text=["payload"], phone=["who"])
    data = f"ref,who,payload,message\nkak01-1,0712345678 (home),{F1},hello\n".encode()
    assert read_items("a.csv", data, site)[0] == [("kak01-1", F1, 2)]
    assert read_items("a.csv", data)[0] == [(None, "hello", 2)]  # without the names: message is the text
    copy = scrub("a.csv", data, "csv", site).decode()
    assert copy.splitlines()[0] == "ref,payload,message"  # the phone column is dropped by its name
    assert "0712345678" not in copy
    assert read_items("b.jsonl", json.dumps({"ref": "kak02-2", "payload": F2}).encode(), site)[0] == [
        ("kak02-2", F2, 1)]


def test_a_bare_frame_on_a_plain_line_is_no_frame_id():
    items, _ = read_items("p.txt", f"{F1}\n".encode())
    assert items == [(None, F1, 1)] and why(items[0]) == "no_frame_id"


def test_csv_without_id_column_reads_the_id_from_the_message():
    data = f"urn,content\ntel:+254712345678,kak03-3 {F3}\ntel:+254712345679,nonsense\n".encode()
    items, _ = read_items("c.csv", data)
    assert items == [("kak03-3", F3, 2), (None, "nonsense", 3)]
    assert why(items[1]) == "no_frame_in_text"  # not a bad_frame_id with the text as its id


def test_csv_records_keep_their_first_line_and_unreadable_records_become_rejects():
    data = (
        "id,phone,message\n"
        f'1,+254712345678,"kak01-1 {F1}"\n'
        '2,+254712345678,"bad"quote\n'
        "\n"
        '3,+254712345678,"multi\nline"\n'
        f"4,+254712345678,kak02-2 {F2}\n"
    ).encode()
    items, _ = read_items("d.csv", data)
    assert items == [("kak01-1", F1, 2), (None, "", 3), (None, "multi\nline", 5), ("kak02-2", F2, 7)]
    assert why(items[1]) == "bad_csv_record"
    assert why(items[2]) == "no_frame_in_text"  # the gateway's id 3 is no frame id


def test_csv_header_is_sniffed_in_a_txt_file_and_a_csv_without_text_column_is_unreadable():
    data = f"Phone;SMS Body\n+254712345678;kak01-1 {F1}\n".encode()
    assert read_items("gateway.txt", data) == ([("kak01-1", F1, 2)], "csv")
    with pytest.raises(FormatError, match="no frame or text column"):
        read_items("e.csv", b"id,phone\n1,+254712345678\n")


def test_json_lines():
    data = (
        json.dumps({"frame_id": "kak01-1", "frame": F1, "from": "+254712345678"}) + "\n"
        + "{not json\n"
        + "\n"
        + "[1, 2]\n"
        + json.dumps({"text": f"kak02-2 {F2}", "msisdn": "+254712345678"}) + "\n"
        + json.dumps({"id": 7, "frame": F3}) + "\n"
    ).encode()
    items, fmt = read_items("g.jsonl", data)
    assert fmt == "jsonl"
    assert items == [("kak01-1", F1, 1), (None, "{not json", 2), (None, "[1, 2]", 4), ("kak02-2", F2, 5), (None, F3, 6)]
    assert why(items[4]) == "no_frame_id"  # a gateway's "id" is no frame id
    assert why(items[1]) == why(items[2]) == "not_json"
    assert read_items("no-extension", data)[1] == "jsonl"


@pytest.mark.parametrize("data, why", [
    (b"kak01-1 \x00\x01\x02", "binary"),
    ("kak01-1 café".encode("latin-1"), "not UTF-8"),
])
def test_unreadable_files_raise_format_error(data, why):
    with pytest.raises(FormatError, match=why):
        read_items("x.txt", data)


def test_complete_part_never_ends_inside_a_line_or_a_quoted_record():
    assert complete_part(b"a 1\nb 2\nc 3") == b"a 1\nb 2\n"
    assert complete_part(b'id,text\n1,"multi\nline') == b"id,text\n"
    assert complete_part(b'id,text\n1,"multi\nline"\n2,x') == b'id,text\n1,"multi\nline"\n'
    assert complete_part(b"no newline yet") == b""
    assert line_count(b"a\nb") == 2 and line_count(b"a\nb\n") == 2 and line_count(b"") == 0


def test_phone_detection_by_name_and_value():
    assert all(is_phone_name(n) for n in ["Sender", "from", "MSISDN", "phone_number", "URN", "contact", "From Number"])
    assert not any(is_phone_name(n) for n in ["id", "message", "received_at", "telegram_status"])
    assert all(looks_like_phone(v) for v in ["+254712345678", "tel:+254712345678", "0712 345 678", "254712345678"])
    assert not any(looks_like_phone(v) for v in ["2024-05-01", "kak01-1", F1, "12:30", "42"])


def test_scrub_drops_phone_columns_by_name_and_by_value_and_keeps_what_was_read():
    data = (
        "\ufeffid,sender,caller_ref,received,message\r\n"
        f"1,+254712345678,0712345678,2024-05-01,kak01-1 {F1}\r\n"
        f"2,+254700000002,0712345679,2024-05-01,kak02-2 {F2}\r\n"
    ).encode()
    out = scrub("x.csv", data, "csv").decode()
    assert out.splitlines() == ["id,received,message", f"1,2024-05-01,kak01-1 {F1}", f"2,2024-05-01,kak02-2 {F2}"]
    jl = (json.dumps({"frame_id": "a-1", "frame": F1, "from": "+254712345678", "note": "ok"}) + "\n{bad\n").encode()
    lines = scrub("x.jsonl", jl, "jsonl").decode().splitlines()
    assert json.loads(lines[0]) == {"frame_id": "a-1", "frame": F1, "note": "ok"}
    assert "254" not in lines[1]
    plain = f"kak01-1 {F1}\n".encode()
    assert scrub("x.txt", plain, "plain") == plain


lines_st = st.lists(
    st.one_of(
        st.builds(lambda n: f"id{n}-1 {frame(1, 'S', 'MED', n + 1, 5)}", st.integers(0, 50)),
        st.just(""), st.just("# comment"), st.just("garbage"),
    ),
    max_size=30,
)


@examples(150)
@given(lines_st, st.sampled_from(["\n", "\r\n"]), st.booleans(), st.integers(0, 2000))
def test_reading_a_growing_file_in_parts_gives_each_item_once(lines, eol, final_eol, cut):
    """What the inbox does with a file still being written: read the whole part, later the rest by line."""
    data = (eol.join(lines) + (eol if final_eol and lines else "")).encode()
    whole, _ = read_items("f.txt", data)
    early = complete_part(data[: min(cut, len(data))])
    first, _ = read_items("f.txt", early)
    done = line_count(early)
    rest = [item for item in whole if item[2] > done]
    assert first + rest == whole
    assert all(item[2] <= line_count(data) for item in whole)
