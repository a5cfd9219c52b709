"""Spreadsheet exports (``.xlsx``, ``.ods``) as rows, through python-calamine in a child process.

Only the first sheet is read; the pure readers then treat its rows exactly
like a CSV's (``core.rules.formats.table_items``) and the archive keeps a CSV
of it without phone columns (``core.rules.scrub.scrub_table``).

A spreadsheet is small on disk and can be huge in memory: calamine sizes its
grid from the sheet's declared dimensions and its extreme cells, so one cell at
XFD1048576 in a 5 KB file asks for 512 GiB (and aborts the process that asked),
and an ``.ods`` row repeated a million times over a thousand repeated columns
is a billion cells. So, before calamine sees a file, ``check_size`` reads what
the sheet declares, streamed with bounded memory (the ``<dimension>`` and every
cell reference of an ``.xlsx`` sheet, the ``number-rows-repeated`` and
``number-columns-repeated`` of an ``.ods`` table) and refuses a sheet over
``MAX_CELLS``. Then calamine reads it in a child process under a memory and a
CPU limit (``sheet_child``): a crash or a limit reached there rejects that one
file with a reason, never the receiver.
"""

from __future__ import annotations

import datetime as dt
import io
import marshal
import os
import re
import struct
import subprocess
import sys
import threading
import zipfile
from xml.etree import ElementTree
from xml.parsers import expat

from core.i18n import N_
from core.rules.formats import FormatError

# Both formats are zip archives; an archive that unpacks to far more than it weighs is refused.
UNPACKED_RATIO = 40
# The grid calamine may build: about 110 bytes a cell in the child; in `watch`, what the rows,
# items and verdicts of the biggest sheet taken in (about 200,000 rows of 4 columns) cost peaks at 290 MB.
MAX_CELLS = 800_000
CHILD_MEMORY = 300 << 20  # RLIMIT_AS of the reading process, bytes
CHILD_CPU = 300  # RLIMIT_CPU of the reading process, seconds
CHILD_TIMEOUT = 900.0  # wall-clock seconds before the reading process is killed
_XML_CHUNK = 1 << 20
_SMALL_XML = 8 << 20  # workbook.xml and its relations: an index, never this big
_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sheet_child.py")


def sheet_rows(data: bytes, max_bytes: int) -> list[list[object]]:
    """The first sheet's rows (cells as str, int, float, bool, dates); ``FormatError`` if unreadable
    or too big to read (the reason says which, and how big)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise FormatError(N_("not a spreadsheet (a broken or partial archive: %(error)s)"),
                          error=exc.__class__.__name__) from None
    with archive:
        unpacked = sum(info.file_size for info in archive.infolist())
        if unpacked > max(max_bytes, len(data) * UNPACKED_RATIO):
            raise FormatError(N_("over the size limit when unpacked (%(unpacked)s bytes)"), unpacked=unpacked)
        try:
            check_size(archive)
        except FormatError:
            raise
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError) as exc:
            raise FormatError(N_("not a spreadsheet (a broken archive: %(error)s)"),
                              error=exc.__class__.__name__) from None
    return _read_in_child(data)


# -- what a sheet declares, read before anything is allocated ------------------------------------


# What a sheet too big to read was found to do, in the words of its refusal.
_REFUSALS = {
    "declares": N_("the sheet declares %(rows)s rows by %(cols)s columns, %(cells)s cells; at most %(most)s cells "
                   "are read (split the export, or export it as CSV)"),
    "holds": N_("the sheet holds %(rows)s rows by %(cols)s columns, %(cells)s cells; at most %(most)s cells are "
                "read (split the export, or export it as CSV)"),
    "repeats cells to": N_("the sheet repeats cells to %(rows)s rows by %(cols)s columns, %(cells)s cells; at most "
                           "%(most)s cells are read (split the export, or export it as CSV)"),
    "repeats rows to": N_("the sheet repeats rows to %(rows)s rows by %(cols)s columns, %(cells)s cells; at most "
                          "%(most)s cells are read (split the export, or export it as CSV)"),
}
# The reader child's refusals (``sheet_child`` loads only the standard library, so it sends a code).
CHILD_ERRORS = {
    "no sheet": N_("the spreadsheet has no sheet"),
    "memory": N_("over the spreadsheet reader's memory limit (%(mib)s MiB)"),
    "unreadable": N_("not a readable spreadsheet (%(error)s)"),
}


def _refuse(what: str, rows: int, cols: int) -> None:
    if rows * cols > MAX_CELLS:
        raise FormatError(_REFUSALS[what], rows=f"{rows:,}", cols=f"{cols:,}", cells=f"{rows * cols:,}",
                          most=f"{MAX_CELLS:,}")


def check_size(archive: zipfile.ZipFile) -> None:
    """``FormatError`` when the first sheet declares or holds more than ``MAX_CELLS`` cells."""
    names = set(archive.namelist())
    if "content.xml" in names:
        _check_ods(archive)
        return
    for member in _first_xlsx_sheets(archive, names):
        _check_xlsx_sheet(archive, member)


def _column(letters: bytes) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + (ch - 64)
    return n


def _first_xlsx_sheets(archive: zipfile.ZipFile, names: set[str]) -> list[str]:
    """The first sheet's XML member (the one calamine reads); every worksheet when that cannot be told."""
    every = sorted(n for n in names if n.startswith("xl/worksheets/") and n.endswith(".xml"))
    try:
        book = _small_xml(archive, "xl/workbook.xml")
        rels = _small_xml(archive, "xl/_rels/workbook.xml.rels")
    except (KeyError, ElementTree.ParseError, FormatError):
        return every
    first = next((e for e in book.iter() if e.tag.rsplit("}", 1)[-1] == "sheet"), None)
    rid = next((v for k, v in (first.attrib.items() if first is not None else []) if k.rsplit("}", 1)[-1] == "id"),
               None)
    for rel in rels.iter():
        if rel.tag.rsplit("}", 1)[-1] == "Relationship" and rel.get("Id") == rid:
            target = rel.get("Target", "")
            member = target.lstrip("/") if target.startswith("/") else os.path.normpath("xl/" + target)
            if member in names:
                return [member]
    return every


def _small_xml(archive: zipfile.ZipFile, member: str) -> ElementTree.Element:
    if archive.getinfo(member).file_size > _SMALL_XML:
        raise FormatError(N_("%(member)s is too big to be a spreadsheet's index"), member=member)
    return ElementTree.fromstring(archive.read(member))


_DIMENSION = re.compile(rb'dimension [^>]*?ref="\$?([A-Z]{1,3})\$?(\d{1,9})(?::\$?([A-Z]{1,3})\$?(\d{1,9}))?"')
# Each starts with a literal, which the regex engine scans for fast (a 30 MB sheet in a fraction of
# a second); a writer with prefixed tags (<x:row>) is left to the child's memory limit.
_ROW = re.compile(rb'<row [^>]*?r="(\d{1,12})"')
# Cell references past column Z: a sheet of 26 columns or fewer (the usual export) costs one
# match per row, not one per cell.
_WIDE_CELL = re.compile(rb' r="([A-Z]{2,4})\d')


def _check_xlsx_sheet(archive: zipfile.ZipFile, member: str) -> None:
    """The sheet's declared ``<dimension>``, then its furthest row and column, streamed a chunk at a
    time. What this misses (a cell numbered beyond its row) the child's memory limit still stops."""
    max_row = max_col = 0
    declared = False
    carry = b""
    with archive.open(member) as fh:
        while True:
            chunk = fh.read(_XML_CHUNK)
            text = carry + chunk
            cut = text.rfind(b">") + 1 if chunk else len(text)
            if chunk and cut == 0 and len(text) < 4 * _XML_CHUNK:
                carry = text  # no tag ends yet: read on
                continue
            body, carry = text[:cut], text[cut:]
            if not declared:
                found = _DIMENSION.search(body)
                if found:
                    declared = True
                    last_col, last_row = (found.group(3), found.group(4)) if found.group(3) else found.group(1, 2)
                    _refuse("declares", int(last_row), _column(last_col))
            rows = _ROW.findall(body)
            if rows:
                max_row = max(max_row, max(map(int, rows)))
            wide = _WIDE_CELL.findall(body)
            if wide:
                max_col = max(max_col, _column(max(set(wide), key=lambda c: (len(c), c))))
            elif b"<c" in body or b":c " in body:
                max_col = max(max_col, 1)
            _refuse("holds", max_row, max(max_col, 1) if max_col <= 26 else max_col)
            if not chunk:
                break


class _Done(Exception):
    """The first table has ended: nothing after it is read."""


def _check_ods(archive: zipfile.ZipFile) -> None:
    """The first table's rows and columns with their repeat counts, through a streaming parser
    that keeps only counters (``content.xml`` can unpack to many times the file's size)."""
    ns_table = "urn:oasis:names:tc:opendocument:xmlns:table:1.0 "
    ns_office = "urn:oasis:names:tc:opendocument:xmlns:office:1.0 "
    state = {"tables": 0, "depth": 0, "row": 0, "rows_rep": 1, "col": 0, "cell_rep": 0, "cell_full": False,
             "row_full": False, "max_row": 0, "max_col": 0, "in_cell": False}

    def repeat(attrs, name):
        value = attrs.get(ns_table + name, "1")
        if not value.isdigit() or len(value) > 12:
            raise FormatError(N_("not a spreadsheet (a bad %(name)s %(value)s)"),
                              name=name, value=repr(value[:20]))
        return max(int(value), 1)

    def start(name, attrs):
        s = state
        if name == ns_table + "table":
            s["tables"] += 1
            if s["tables"] > 1:
                raise _Done
            return
        if s["tables"] != 1:
            return
        if name == ns_table + "table-row":
            s["rows_rep"], s["col"], s["row_full"] = repeat(attrs, "number-rows-repeated"), 0, False
        elif name in (ns_table + "table-cell", ns_table + "covered-table-cell"):
            s["cell_rep"] = repeat(attrs, "number-columns-repeated")
            s["cell_full"] = (ns_office + "value-type") in attrs
            s["in_cell"] = True
        elif s["in_cell"]:
            s["cell_full"] = True  # text or anything else inside the cell

    def end(name):
        s = state
        if s["tables"] != 1:
            return
        if name == ns_table + "table":
            raise _Done
        if name in (ns_table + "table-cell", ns_table + "covered-table-cell"):
            s["col"] += s["cell_rep"]
            if s["cell_full"]:
                s["max_col"] = max(s["max_col"], s["col"])
                s["row_full"] = True
            s["in_cell"] = False
            _refuse("repeats cells to", s["row"] + s["rows_rep"], s["max_col"])
        elif name == ns_table + "table-row":
            s["row"] += s["rows_rep"]
            if s["row_full"]:
                s["max_row"] = s["row"]
            _refuse("repeats rows to", s["max_row"], s["max_col"])

    parser = expat.ParserCreate(namespace_separator=" ")
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        with archive.open("content.xml") as fh:
            while True:
                chunk = fh.read(_XML_CHUNK)
                parser.Parse(chunk, not chunk)
                if not chunk:
                    break
    except _Done:
        return
    except expat.ExpatError as exc:
        raise FormatError(N_("not a readable spreadsheet (content.xml: %(reason)s)"),
                          reason=expat.ErrorString(exc.code)) from None


# -- the child process ------------------------------------------------------------------------------


def _rebuild(value):
    if type(value) is tuple and len(value) == 3 and value[0] == "\0date":
        kind, text = value[1], value[2]
        if kind == "timedelta":
            return dt.timedelta(seconds=float(text))
        return getattr(dt, kind).fromisoformat(text)
    return value


def _read_exact(stream, size: int) -> bytes:
    parts, left = [], size
    while left:
        part = stream.read(left)
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _read_in_child(data: bytes) -> list[list[object]]:
    """The first sheet's rows, read by ``sheet_child`` under its limits; ``FormatError`` when the
    child cannot read the file, dies, or is killed."""
    proc = subprocess.Popen(
        [sys.executable, "-I", _CHILD, str(CHILD_MEMORY), str(CHILD_CPU)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True,
    )

    def feed():
        try:
            proc.stdin.write(data)
        except (BrokenPipeError, OSError):
            pass  # the child ended early; its exit says why
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    writer = threading.Thread(target=feed, name="sheet-feed", daemon=True)
    writer.start()
    timer = threading.Timer(CHILD_TIMEOUT, proc.kill)
    timer.daemon = True
    timer.start()
    rows: list[list[object]] = []
    ending = None
    try:
        while True:
            head = _read_exact(proc.stdout, 4)
            if len(head) < 4:
                break
            blob = _read_exact(proc.stdout, struct.unpack(">I", head)[0])
            try:
                chunk = marshal.loads(blob)
            except (EOFError, ValueError, TypeError):
                break
            if type(chunk) is list:
                rows.extend(chunk)
            elif type(chunk) is tuple and chunk[0] == "\0dated":
                rows.extend([_rebuild(v) for v in row] for row in chunk[1])
            else:
                ending = chunk
                break
    finally:
        proc.stdout.close()
        code = proc.wait()
        timer.cancel()
        writer.join()
    if ending and ending[0] == "\0end" and code == 0:
        return rows
    if ending and ending[0] == "\0error":
        raise FormatError(CHILD_ERRORS[ending[1]], **ending[2])
    if code < 0:
        import signal

        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        raise FormatError(N_("the spreadsheet reader stopped on %(name)s (over its limits of %(mib)s MiB and "
                             "%(cpu)s s CPU, or a crash); the file is not read"),
                          name=name, mib=CHILD_MEMORY >> 20, cpu=CHILD_CPU)
    raise FormatError(N_("the spreadsheet reader failed (exit %(code)s); the file is not read"), code=code)
