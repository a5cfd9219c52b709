"""Reading inbox file contents into ``(frame_id, text, line)`` items (pure).

Three text formats: plain text (``frame_id frame`` per line), CSV exports of
SMS gateways (header row, columns found by name: ``core.rules.columns``) and
JSON lines; spreadsheets arrive here as rows (``table_items``). The unit of
rejection is the line: a line with a NUL or control byte, one that is not
UTF-8, a JSON line that is not an object, a row with no frame in it, each
becomes an item whose text is an ``Unreadable`` carrying the reason, so the
receiver records it as a reject with its line number while every other line
is taken in. A whole file is refused (``FormatError``) only when nothing in
it can be read as a frame source: binary data, no usable columns.

Line numbers count ``\\n`` only, so they agree with the byte offsets the inbox
commits as progress. Personal data: only the id and the frame text leave a
reader; phone-number columns are never returned.
"""

from __future__ import annotations

import csv
import json
import re
from typing import Iterator, Sequence

from core.i18n import N_, MarkedError

from .columns import DEFAULT_NAMES, NO_TEXT_COLUMN, SPACE, ColumnNames, Columns, cell, choose, no_text_column, norm
from .frame import Unreadable

Item = tuple[str | None, str | None, int]

_SEPARATOR = re.compile(r"[ \t,]+")
# Control characters that no gateway line carries (tab, CR, VT and FF are white space here).
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_BOM = b"\xef\xbb\xbf"
_SAMPLE = 120  # characters of a bad line kept in its reject row

PLAIN, CSV, JSONL, XLSX, ODS = "plain", "csv", "jsonl", "xlsx", "ods"
SPREADSHEETS = {"xlsx": XLSX, "ods": ODS}


class FormatError(MarkedError, ValueError):
    """A file that cannot be read at all (binary, no usable columns); the message says why."""


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Physical lines split on ``\\n`` only, numbered from 1, ``\\r`` endings kept."""
    yield from enumerate(text.split("\n"), start=1)


def decode_lines(data: bytes) -> tuple[list[str], dict[int, Unreadable]]:
    """The file's lines as text, and the lines that are not frame sources, by number, with why.

    A bad line stays in the first list (undecodable bytes replaced), so a CSV
    record spanning it keeps its shape; the readers turn the record or line
    that holds it into one reject.
    The whole file is decoded at once when it can be (the common case); only a
    file with a bad byte is decoded line by line. ``FormatError`` when no line
    is readable, or when NUL bytes (binary data) spoil more lines than not.
    """
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and _CONTROL.search(text) is None:
        return text.split("\n"), {}
    lines: list[str] = []
    bad: dict[int, Unreadable] = {}
    good = 0
    first_bad = None
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if first_bad is None:
                first_bad = sum(len(x) + 1 for x in lines) + exc.start
            bad[number] = Unreadable(raw[:_SAMPLE].decode("utf-8", "backslashreplace"), "bad_encoding")
            lines.append(raw.decode("utf-8", "replace"))
            continue
        if _CONTROL.search(line):
            bad[number] = Unreadable(line[:_SAMPLE], "control_byte")
            lines.append(line)
            continue
        good += bool(line.strip(SPACE))
        lines.append(line)
    if good == 0 or (b"\x00" in data and len(bad) > good):
        if b"\x00" in data:
            raise FormatError(N_("binary data (NUL bytes), not a text file"))
        if first_bad is None:
            raise FormatError(N_("not text: a control character in every line"))
        raise FormatError(N_("not UTF-8 text (no line can be read; bad byte at offset %(offset)s)"), offset=first_bad)
    return lines, bad


def plain_lines(text: str) -> Iterator[Item]:
    """``frame_id frame`` per line (space, tab or comma between); blank and ``#`` lines skipped."""
    return _plain(text.split("\n"), {})


def _plain(lines: Sequence[str], bad: dict[int, Unreadable]) -> Iterator[Item]:
    for number, raw in enumerate(lines, start=1):
        if number in bad:
            yield (None, bad[number], number)
            continue
        line = raw.strip(SPACE)
        if not line or line.startswith("#"):
            continue
        parts = _SEPARATOR.split(line, maxsplit=1)
        if len(parts) != 2 and line.startswith("H1|"):
            yield (None, Unreadable(line, "no_frame_id"), number)  # a bare frame: not its own id
        elif len(parts) != 2:
            yield (parts[0], None, number)
        else:
            yield (parts[0], parts[1], number)


# -- CSV ------------------------------------------------------------------------------


def delimiter(header: str) -> str:
    counts = {d: header.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: (counts[d], d == ","))
    return best if counts[best] else ","


def _looks_like_header(line: str, site: ColumnNames = DEFAULT_NAMES) -> bool:
    try:
        fields = next(csv.reader([line], delimiter=delimiter(line)), [])
    except csv.Error:  # e.g. a field over csv's size limit: not a header anyone wrote
        return False
    if len(fields) < 2:
        return False
    names = [norm(f) for f in fields]
    if not all(re.fullmatch(r"[a-z][a-z0-9_]*", n or "-") for n in names):
        return False
    return any(site.is_text(n) for n in names)


def csv_rows(lines: Sequence[str]) -> Iterator[tuple[int, int, list[str] | None]]:
    """``(first line, last line, fields)`` per record; ``None`` fields for a record csv cannot read."""
    lines = list(lines)
    if lines and lines[-1] == "":
        lines.pop()
    position = 0  # lines consumed so far

    def feed():
        nonlocal position
        for line in lines:
            position += 1
            yield line + "\n"

    header_line = next((l for l in lines if l.strip(SPACE)), "")
    reader = csv.reader(feed(), delimiter=delimiter(header_line), strict=True)
    while True:
        start = position + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error:
            yield start, position, None
            continue
        if row and row[-1].endswith("\r"):
            row[-1] = row[-1][:-1]  # CRLF: csv was handed lines split on \n only
        if not row or all(not f.strip(SPACE) for f in row):
            continue
        yield start, position, row


def _row_items(rows, bad: dict[int, Unreadable], site: ColumnNames = DEFAULT_NAMES) -> Iterator[Item]:
    """Items from ``(first line, last line, cells)`` rows whose first is the header (CSV and
    spreadsheets alike); a record holding a bad line is one reject, with that line's reason."""
    first = next(rows, None)
    if first is None:
        return
    if bad and any(n in bad for n in range(first[0], first[1] + 1)):
        raise FormatError(N_("the header row cannot be read (a bad byte in it)"))
    header = first[2]
    if header is None:
        raise FormatError(N_("the header row cannot be read"))
    header = [cell(h) or "" for h in header]
    cols = Columns(header, site)
    if cols.text is None:
        raise FormatError(NO_TEXT_COLUMN, **no_text_column(header))
    has_id = cols.has_id
    for line, last, row in rows:
        flaw = next((bad[n] for n in range(line, last + 1) if n in bad), None) if bad else None
        if flaw is not None:
            yield (None, flaw, line)
            continue
        if row is None:
            yield (None, Unreadable("", "bad_csv_record"), line)
            continue

        def get(i):
            return cell(row[i]) if i is not None and i < len(row) else None

        fid, text_value = choose(get(cols.frame_id), get(cols.text), has_id)
        yield (fid, text_value, line)


# -- JSON lines -----------------------------------------------------------------------


def json_object(line: str) -> dict | None:
    """One JSON-lines line as an object; None when it is not JSON or not an object."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _json_items(lines: Sequence[str], bad: dict[int, Unreadable], site: ColumnNames = DEFAULT_NAMES) -> Iterator[Item]:
    for number, raw in enumerate(lines, start=1):
        if number in bad:
            yield (None, bad[number], number)
            continue
        line = raw.strip(SPACE)
        if not line:
            continue
        obj = json_object(line)
        if obj is None:
            yield (None, Unreadable(line[:_SAMPLE], "not_json"), number)
            continue
        keys = list(obj)
        cols = Columns(keys, site)

        def get(i):
            return cell(obj[keys[i]]) if i is not None else None

        fid, frame = choose(get(cols.frame_id), get(cols.text), cols.has_id)
        yield (fid, frame, number)


# -- detection and the public entry points ---------------------------------------------


def detect(name: str, lines: Sequence[str], site: ColumnNames = DEFAULT_NAMES) -> str:
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if ext == "csv":
        return CSV
    if ext in ("jsonl", "ndjson", "json"):
        return JSONL
    first = next((l.strip(SPACE) for l in lines if l.strip(SPACE)), "")
    if first.startswith("{"):
        return JSONL
    if _looks_like_header(first, site):
        return CSV
    return PLAIN


def spreadsheet_kind(name: str) -> str | None:
    """``xlsx`` or ``ods`` for a spreadsheet's name; None for the text formats."""
    return SPREADSHEETS.get(name.rsplit(".", 1)[-1].lower()) if "." in name else None


def read_items(name: str, data: bytes, site: ColumnNames = DEFAULT_NAMES) -> tuple[list[Item], str]:
    """Decode, detect the format and read every item; ``FormatError`` if the file is unreadable.
    ``site`` is the site's own column names (``[inbox] id_columns`` ...)."""
    lines, bad = decode_lines(data)
    fmt = detect(name, lines, site)
    if fmt == CSV:
        items = list(_row_items(csv_rows(lines), bad, site))
    elif fmt == JSONL:
        items = list(_json_items(lines, bad, site))
    else:
        items = list(_plain(lines, bad))
    return items, fmt


def table_items(rows: Sequence[Sequence[object]], site: ColumnNames = DEFAULT_NAMES) -> list[Item]:
    """A spreadsheet's first sheet, read like a CSV: header row, same column rules; line = row number."""
    numbered = ((n, n, list(r)) for n, r in enumerate(rows, start=1)
                if any(cell(v) and cell(v).strip(SPACE) for v in r))
    return list(_row_items(numbered, {}, site))


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
