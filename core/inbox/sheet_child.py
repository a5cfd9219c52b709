"""The child process that reads one spreadsheet, under a memory and a CPU limit.

Run as a script by path (``python -I core/inbox/sheet_child.py MEMORY CPU``),
never imported by the receiver: it loads only the standard library and
python-calamine, so it starts fast and small. It sets its own limits first
(``RLIMIT_AS``, ``RLIMIT_CPU``), then reads the file's bytes from stdin and
writes the first sheet's rows to stdout in chunks, each a 4-byte length and a
``marshal`` of a list of rows (marshal reads back plain values only, and is
fast). A chunk holding dates is ``("\\0dated", rows)``, each date a ``("\\0date", kind,
text)`` tuple that the parent rebuilds.
A last chunk ``("\\0end", rows)`` says the sheet was read to its end; an
unreadable file is ``("\\0error", code, values)``, worded by the parent
(``spreadsheets.CHILD_ERRORS``). A crash, or the kernel refusing memory past
the limit, ends only this process: the receiver rejects the file.
"""

from __future__ import annotations

import datetime as dt
import io
import marshal
import resource
import struct
import sys

CHUNK_ROWS = 2000
_PLAIN = (str, int, float, bool, type(None))


def _plain(value):
    if isinstance(value, dt.datetime):
        return ("\0date", "datetime", value.isoformat())
    if isinstance(value, dt.date):
        return ("\0date", "date", value.isoformat())
    if isinstance(value, dt.time):
        return ("\0date", "time", value.isoformat())
    if isinstance(value, dt.timedelta):
        return ("\0date", "timedelta", repr(value.total_seconds()))
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _send(out, obj) -> None:
    blob = marshal.dumps(obj)
    out.write(struct.pack(">I", len(blob)))
    out.write(blob)


def main(argv: list[str]) -> int:
    memory, cpu = int(argv[1]), int(argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    data = sys.stdin.buffer.read()
    out = sys.stdout.buffer
    from python_calamine import CalamineWorkbook

    try:
        book = CalamineWorkbook.from_filelike(io.BytesIO(data))
        del data
        if not book.sheet_names:
            _send(out, ("\0error", "no sheet", {}))
            return 0
        sheet = book.get_sheet_by_index(0)
        chunk: list = []
        dated = False
        count = 0
        for row in sheet.iter_rows():
            if not all(type(v) in _PLAIN for v in row):
                row = [_plain(v) for v in row]
                dated = True
            chunk.append(row)
            count += 1
            if len(chunk) >= CHUNK_ROWS:
                _send(out, ("\0dated", chunk) if dated else chunk)
                chunk, dated = [], False
        if chunk:
            _send(out, ("\0dated", chunk) if dated else chunk)
        _send(out, ("\0end", count))
    except MemoryError:
        _send(out, ("\0error", "memory", {"mib": memory >> 20}))
    except Exception as exc:  # noqa: BLE001 - calamine's errors are many classes; each means "unreadable"
        _send(out, ("\0error", "unreadable", {"error": exc.__class__.__name__}))
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
