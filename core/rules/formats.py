"""Reading inbox file contents into ``(frame_id, text, line)`` items (pure).

Three formats: plain text (``frame_id frame`` per line), CSV exports of SMS
gateways (header row, columns found by common names) and JSON lines. A line
that cannot be read as an item still becomes an item (with a ``None`` id or
text), so the receiver records it as a reject with its line number instead of
it vanishing. Line numbers count ``\\n`` only, so they agree with the byte
offsets the inbox commits as progress.

Personal data: only the id and the frame text leave a reader. Phone-number
columns of an export (``sender``, ``msisdn``, ...) are never returned, and
``scrub`` rewrites a file without them for the archive copy.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Iterable, Iterator

Item = tuple[str | None, str | None, int]

_SEPARATOR = re.compile(r"[ \t,]+")
# "<frame_id> <frame>" inside one message text; the frame part must look like a frame.
_EMBEDDED = re.compile(r"([^\s,]+)[ \t,]+(H1\|.*)", re.S)
_SPACE = " \t\r\n\x0b\x0c"

PLAIN, CSV, JSONL = "plain", "csv", "jsonl"

# Column (or JSON key) names, compared after `_norm`.
FRAME_ID_NAMES = frozenset({"frame_id", "frameid", "frame_key"})
GENERIC_ID_NAMES = frozenset({"id", "message_id", "messageid", "msg_id", "msgid", "sms_id", "smsid", "uuid"})
TEXT_NAMES = frozenset({
    "frame", "frame_text", "text", "message", "message_text", "message_body", "text_message",
    "body", "content", "msg", "sms", "sms_text", "sms_body",
})
PHONE_NAMES = frozenset({
    "sender", "from", "to", "msisdn", "phone", "phone_number", "urn", "contact", "number", "mobile",
    "tel", "telephone", "originator", "recipient", "caller", "callee", "cell", "address", "src",
    "dst", "source_address", "destination", "destination_address", "from_number", "to_number",
})
# A name is phone-like when any of its `_`-separated words is one of these.
PHONE_WORDS = frozenset({
    "sender", "from", "msisdn", "phone", "urn", "contact", "number", "mobile", "tel", "telephone",
    "originator", "recipient", "caller", "callee", "cell", "address", "whatsapp",
})
_PHONE_VALUE = re.compile(r"\+\d{6,15}|\d{9,15}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class FormatError(ValueError):
    """A file that cannot be read at all (binary, not UTF-8, no text column); the message says why."""


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lstrip("\ufeff").lower()).strip("_")


def is_phone_name(name: str) -> bool:
    n = _norm(name)
    return n in PHONE_NAMES or any(word in PHONE_WORDS for word in n.split("_"))


def looks_like_phone(value: object) -> bool:
    """An MSISDN-shaped value (``+254 712 345 678``, ``tel:0712345678``), dates excluded."""
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        return False
    s = str(value).strip()
    if _DATE.match(s):
        return False
    if ":" in s:
        scheme, _, rest = s.partition(":")
        if scheme.isalpha():
            s = rest
    s = re.sub(r"[\s().\-/]", "", s)
    return _PHONE_VALUE.fullmatch(s) is not None


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Physical lines split on ``\\n`` only, numbered from 1, ``\\r`` endings kept."""
    yield from enumerate(text.split("\n"), start=1)


def plain_lines(text: str) -> Iterator[Item]:
    """``frame_id frame`` per line (space, tab or comma between); blank and ``#`` lines skipped."""
    for number, raw in _lines(text):
        line = raw.strip(_SPACE)
        if not line or line.startswith("#"):
            continue
        parts = _SEPARATOR.split(line, maxsplit=1)
        if len(parts) != 2:
            yield (parts[0], None, number)
        else:
            yield (parts[0], parts[1], number)


# -- choosing the id and the frame from a row ---------------------------------------


class _Columns:
    """Where the id and the text are in a header (or a JSON object's keys)."""

    def __init__(self, names: Iterable[str]):
        self.frame_id = self.generic_id = self.text = None
        for position, name in enumerate(names):
            n = _norm(name)
            if n in FRAME_ID_NAMES and self.frame_id is None:
                self.frame_id = position
            elif n in GENERIC_ID_NAMES and self.generic_id is None:
                self.generic_id = position
            elif n in TEXT_NAMES and self.text is None:
                self.text = position


def _choose(frame_id: str | None, generic_id: str | None, text: str | None, has_id_column: bool):
    """The frame id and frame of one row.

    A ``frame_id`` column wins. Otherwise a message of the form ``<frame_id>
    <frame>`` carries its own id, which beats a gateway's message ``id``: that
    one is new on every re-send, and keying on it would count re-sends twice.
    """
    if text is None:
        return (frame_id or generic_id, None)
    stripped = text.strip(_SPACE)
    embedded = _EMBEDDED.fullmatch(stripped)
    if frame_id:
        if embedded and embedded.group(1) == frame_id:
            return (frame_id, embedded.group(2))
        return (frame_id, text)
    if embedded:
        return embedded.groups()
    if generic_id or has_id_column:
        return (generic_id, text)
    parts = _SEPARATOR.split(stripped, maxsplit=1)
    return (parts[0], parts[1]) if len(parts) == 2 else (parts[0] or None, None)


def _cell(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


# -- CSV ------------------------------------------------------------------------------


def _delimiter(header: str) -> str:
    counts = {d: header.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: (counts[d], d == ","))
    return best if counts[best] else ","


def _looks_like_header(line: str) -> bool:
    try:
        fields = next(csv.reader([line], delimiter=_delimiter(line)), [])
    except csv.Error:  # e.g. a field over csv's size limit: not a header anyone wrote
        return False
    if len(fields) < 2:
        return False
    names = [_norm(f) for f in fields]
    if not all(re.fullmatch(r"[a-z][a-z0-9_]*", n or "-") for n in names):
        return False
    return any(n in TEXT_NAMES for n in names)


def _csv_rows(text: str) -> Iterator[tuple[int, list[str] | None]]:
    """``(first line, fields)`` per record; ``None`` fields for a record csv cannot read."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    position = 0  # lines consumed so far

    def feed():
        nonlocal position
        for line in lines:
            position += 1
            yield line + "\n"

    header_line = next((l for l in lines if l.strip(_SPACE)), "")
    reader = csv.reader(feed(), delimiter=_delimiter(header_line), strict=True)
    while True:
        start = position + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error:
            yield start, None
            continue
        if row and row[-1].endswith("\r"):
            row[-1] = row[-1][:-1]  # CRLF: csv was handed lines split on \n only
        if not row or all(not f.strip(_SPACE) for f in row):
            continue
        yield start, row


def _csv_items(text: str) -> Iterator[Item]:
    rows = _csv_rows(text)
    first = next(rows, None)
    if first is None:
        return
    header = first[1]
    if header is None:
        raise FormatError("the CSV header cannot be read")
    cols = _Columns(header)
    if cols.text is None:
        raise FormatError("the CSV header names no frame or text column")
    has_id = cols.frame_id is not None or cols.generic_id is not None
    for line, row in rows:
        if row is None:
            yield (None, None, line)
            continue

        def get(i):
            return row[i] if i is not None and i < len(row) else None

        fid, text_value = _choose(get(cols.frame_id), get(cols.generic_id), get(cols.text), has_id)
        yield (fid, text_value, line)


# -- JSON lines -----------------------------------------------------------------------


def _json_items(text: str) -> Iterator[Item]:
    for number, raw in _lines(text):
        line = raw.strip(_SPACE)
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            yield (None, None, number)
            continue
        keys = list(obj)
        cols = _Columns(keys)

        def get(i):
            return _cell(obj[keys[i]]) if i is not None else None

        has_id = cols.frame_id is not None or cols.generic_id is not None
        fid, frame = _choose(get(cols.frame_id), get(cols.generic_id), get(cols.text), has_id)
        yield (fid, frame, number)


# -- detection and the public entry points ---------------------------------------------


def _decode(data: bytes) -> str:
    if b"\x00" in data:
        raise FormatError("binary data (NUL bytes), not a text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(f"not UTF-8 text (bad byte at offset {exc.start})") from None


def detect(name: str, text: str) -> str:
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if ext == "csv":
        return CSV
    if ext in ("jsonl", "ndjson", "json"):
        return JSONL
    first = next((l.strip(_SPACE) for _n, l in _lines(text) if l.strip(_SPACE)), "")
    if first.startswith("{"):
        return JSONL
    if _looks_like_header(first):
        return CSV
    return PLAIN


def read_items(name: str, data: bytes) -> tuple[list[Item], str]:
    """Decode, detect the format and read every item; ``FormatError`` if the file is unreadable."""
    text = _decode(data)
    fmt = detect(name, text)
    if fmt == CSV:
        items = list(_csv_items(text))
    elif fmt == JSONL:
        items = list(_json_items(text))
    else:
        items = list(plain_lines(text))
    return items, fmt


def line_count(data: bytes) -> int:
    """Lines in ``data`` as the readers number them (a last line without ``\\n`` counts)."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def complete_part(data: bytes) -> bytes:
    """The part of a file that is surely whole while its writer may still append.

    It ends at the last newline that is outside a quoted CSV field, so neither a
    half-written line nor a half-written multi-line record is read early.
    """
    end = data.rfind(b"\n") + 1
    if b'"' not in data[:end]:
        return data[:end]
    even_end = 0
    quotes = 0
    start = 0
    while True:
        nl = data.find(b"\n", start, end)
        if nl < 0:
            break
        quotes += data.count(b'"', start, nl + 1)
        if quotes % 2 == 0:
            even_end = nl + 1
        start = nl + 1
    return data[:even_end]


# -- the archive copy without personal data --------------------------------------------


def scrub(name: str, data: bytes, fmt: str) -> bytes:
    """``data`` rewritten without phone-like columns (by name or by value) for ``processed/``.

    Plain text has no columns and is kept as it is. The id and text columns the
    reader used always stay, so the archive still shows what was ingested.
    """
    if fmt == PLAIN:
        return data
    text = _decode(data)
    if fmt == CSV:
        return _scrub_csv(text).encode("utf-8")
    return _scrub_jsonl(text).encode("utf-8")


def _scrub_csv(text: str) -> str:
    rows = [(line, row) for line, row in _csv_rows(text)]
    good = [row for _l, row in rows if row is not None]
    if not good:
        return ""
    header = good[0]
    cols = _Columns(header)
    used = {cols.frame_id, cols.generic_id, cols.text} - {None}
    keep = []
    for i, name in enumerate(header):
        if i in used:
            keep.append(i)
            continue
        if is_phone_name(name) or any(i < len(r) and looks_like_phone(r[i]) for r in good[1:]):
            continue
        keep.append(i)
    out = io.StringIO()
    writer = csv.writer(out, delimiter=_delimiter(",".join(header)), lineterminator="\n")
    for _line, row in rows:
        if row is None:
            writer.writerow(["(unreadable record)"])
        else:
            writer.writerow([row[i] if i < len(row) else "" for i in keep])
    return out.getvalue()


def _scrub_jsonl(text: str) -> str:
    objs: list[object] = []
    dropped: set[str] = set()
    for _n, raw in _lines(text):
        line = raw.strip(_SPACE)
        if not line:
            objs.append(None)
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            obj = {"unreadable_line": True}
        if not isinstance(obj, dict):
            obj = {"unreadable_line": True}
        for key, value in obj.items():
            if is_phone_name(key) or looks_like_phone(value) or not isinstance(value, (str, int, float, bool, type(None))):
                dropped.add(key)
        objs.append(obj)
    if objs and objs[-1] is None and text.endswith("\n"):
        objs.pop()  # the empty piece after the final newline
    out = []
    for obj in objs:
        if obj is None:
            out.append("")
            continue
        cols = _Columns(list(obj))
        used = {k for i, k in enumerate(obj) if i in {cols.frame_id, cols.generic_id, cols.text}}
        out.append(json.dumps({k: v for k, v in obj.items() if k in used or k not in dropped}, ensure_ascii=False))
    return "\n".join(out) + ("\n" if out else "")
