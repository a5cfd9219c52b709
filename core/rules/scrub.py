"""The copies the receiver keeps of a file, without phone numbers (pure).

Every copy kept (``processed/``, and ``rejected/`` too) is rewritten: phone
columns and JSON keys are dropped (by name, or by a value that looks like a
number anyone dials), and every phone-like digit run left anywhere is masked
(``core.rules.privacy``). The id and text columns the reader used always stay,
so the archive still shows what was ingested. ``keep_originals`` is the
operator's explicit opt-out, decided by the caller.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Sequence

from .columns import DEFAULT_NAMES, SPACE, ColumnNames, Columns, cell, is_phone_name, looks_like_phone
from .formats import CSV, JSONL, PLAIN, FormatError, csv_rows, decode_lines, delimiter, detect, json_object
from .privacy import mask_phones, mask_phones_bytes


def scrub(name: str, data: bytes, fmt: str | None = None, site: ColumnNames = DEFAULT_NAMES) -> bytes:
    """``data`` as it is archived: phone columns dropped, phone-like runs masked.

    ``fmt`` is the format the reader found; None (a rejected file) detects it,
    and a file that is not text at all keeps its bytes with the runs masked.
    """
    if fmt == PLAIN:
        return mask_phones_bytes(data)
    try:
        lines, bad = decode_lines(data)
    except FormatError:
        return mask_phones_bytes(data)
    fmt = fmt or detect(name, lines, site)
    if fmt == CSV:
        return _scrub_csv(lines, bad, site).encode("utf-8")
    if fmt == JSONL:
        return _scrub_jsonl(lines, bad, site).encode("utf-8")
    return mask_phones_bytes(data)


def _kept_columns(header: Sequence[str], body: Sequence[Sequence[object]], site: ColumnNames) -> list[int]:
    cols = Columns(header, site)
    used = cols.used
    keep = []
    for i, name in enumerate(header):
        if i in used:
            keep.append(i)
        elif not (is_phone_name(name, site) or any(i < len(r) and looks_like_phone(r[i]) for r in body)):
            keep.append(i)
    return keep


def _write_rows(header: Sequence[str], body_rows, delim: str = ",", site: ColumnNames = DEFAULT_NAMES) -> str:
    """Header and rows as CSV, without phone columns, every cell masked; a None row is unreadable."""
    good = [r for r in body_rows if r is not None]
    keep = _kept_columns(header, good, site)
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delim, lineterminator="\n")
    writer.writerow([mask_phones(header[i]) for i in keep])
    for row in body_rows:
        if row is None:
            writer.writerow(["(unreadable record)"])
        else:
            writer.writerow([mask_phones(_text(row[i])) if i < len(row) else "" for i in keep])
    return out.getvalue()


def _text(value: object) -> str:
    shown = cell(value)
    if shown is not None:
        return shown
    return "" if value is None else str(value)


def _scrub_csv(lines: list[str], bad: dict, site: ColumnNames) -> str:
    rows = list(csv_rows(lines))
    if not rows or rows[0][2] is None:
        return mask_phones("\n".join(lines))
    header = rows[0][2]
    body = [None if any(n in bad for n in range(first, last + 1)) else row for first, last, row in rows[1:]]
    return _write_rows(header, body, delimiter(",".join(header)), site)


def scrub_table(rows: Sequence[Sequence[object]], site: ColumnNames = DEFAULT_NAMES) -> bytes:
    """A spreadsheet's first sheet as the CSV that is archived (header row first, blank rows out)."""
    rows = [list(r) for r in rows if any(_text(v).strip(SPACE) for v in r)]
    if not rows:
        return b""
    header = [_text(h) for h in rows[0]]
    return _write_rows(header, rows[1:], site=site).encode("utf-8")


def _scrub_jsonl(lines: list[str], bad: dict, site: ColumnNames) -> str:
    objs: list[object] = []
    dropped: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        line = raw.strip(SPACE)
        if number in bad:
            objs.append({"unreadable_line": number})
            continue
        if not line:
            objs.append(None)
            continue
        obj = json_object(line)
        if obj is None:
            obj = {"unreadable_line": number}
        for key, value in obj.items():
            if is_phone_name(key, site) or looks_like_phone(value) or not isinstance(value, (str, int, float, bool, type(None))):
                dropped.add(key)
        objs.append(obj)
    while objs and objs[-1] is None:
        objs.pop()  # the empty piece after the final newline
    out = []
    for obj in objs:
        if obj is None:
            out.append("")
            continue
        cols = Columns(list(obj), site)
        used = {k for i, k in enumerate(obj) if i in cols.used}
        kept = {mask_phones(k): (mask_phones(v) if isinstance(v, str) else v)
                for k, v in obj.items() if k in used or k not in dropped}
        out.append(json.dumps(kept, ensure_ascii=False))
    return "\n".join(out) + ("\n" if out else "")
