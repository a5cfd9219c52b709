"""Exports for the people who plan deliveries and report to donors: any view as CSV or .xlsx.

One writer for the ``export`` command, ``ranking --csv`` and the console's
export dialog. A file is written to a temporary name in the target's own
folder and renamed into place, so nobody ever opens half a list; an existing
file is kept unless ``force``; a directory or a missing folder is a one-line
error (the folder is never created on a guess). Every text cell is guarded
against formulas (``core.rules.cells``).
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import tempfile
from pathlib import Path
from typing import IO, Callable, Iterable

from console.errors import CommandError
from core.i18n import _
from core.home import private_folder, sync_folder
from core.rules.cells import guard
from core.rules.hxl import hashtag_row

from .export_views import VIEWS, View

FORMATS = ("csv", "xlsx")


def view(name: str) -> View:
    if name not in VIEWS:
        raise CommandError.told(_("no export view %(name)s; choose one of %(views)s"), {"views": ", ".join(VIEWS)},
                                name=repr(name))
    return VIEWS[name]


def fmt_for(path: str | None, given: str | None) -> str:
    """The format asked for, else the one the file name says, else CSV."""
    if given:
        if given not in FORMATS:
            raise CommandError.told(_("an export format is %(formats)s, not %(given)s"), {"formats": " or ".join(FORMATS)},
                                    given=repr(given))
        return given
    return "xlsx" if path and str(path).lower().endswith(".xlsx") else "csv"


def default_target(exports: Path, name: str, fmt: str, now: float) -> Path:
    """``<exports>/<stem>-<time>.<fmt>``, numbered when that name is taken (two in one second).

    The home's own exports folder is made (0700) when missing; a folder the operator names never is.
    A symlink standing for the exports folder is refused (``PlantedLink``), never written through.
    """
    private_folder(exports)
    stamp = dt.datetime.fromtimestamp(now).strftime("%Y%m%d-%H%M%S")
    stem = view(name).stem
    target = exports / f"{stem}-{stamp}.{fmt}"
    n = 2
    while target.exists():
        target = exports / f"{stem}-{stamp}-{n}.{fmt}"
        n += 1
    return target


def already_there(target: Path) -> CommandError:
    return CommandError.told(_("%(path)s already exists; use --force to replace it"), path=target)


def check_target(target: Path, force: bool) -> Path:
    """Refuse a target that is a folder, in a folder that does not exist, or taken (without force)."""
    target = Path(target)
    if target.is_dir():
        raise CommandError.told(_("%(path)s is a folder; give a file name to write"), path=target)
    parent = target.parent
    if not parent.is_dir():
        raise CommandError.told(_("the folder %(path)s does not exist; create it first"), path=parent)
    if target.is_symlink():  # even with --force: a planted link is news, not a name to replace
        raise CommandError.told(_("%(path)s is a symlink; refusing to write through it (remove it or name another "
                                  "file)"), path=target)
    if target.exists() and not force:
        raise already_there(target)
    return target


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return guard(value)
    return value


def _rows(receiver, v: View) -> Iterable[list]:
    yield from v.rows(receiver)
    if v.trailer is not None:
        yield from v.trailer(receiver)


def write_table_csv(out: IO[str], header: list[str], rows: Iterable[list], hxl: bool = False) -> int:
    """One table as CSV rows on ``out`` (with ``hxl``, HXL's hashtag row under the header); return
    the number of rows under the header (the hashtag row not counted)."""
    writer = csv.writer(out)
    writer.writerow(header)
    if hxl:
        writer.writerow(hashtag_row(header))
    n = 0
    for row in rows:
        writer.writerow([_cell(x) for x in row])
        n += 1
    return n


def write_csv(receiver, name: str, out: IO[str], hxl: bool = False) -> int:
    """The view as CSV rows on ``out``; return the number of rows under the header."""
    v = view(name)
    return write_table_csv(out, v.header, _rows(receiver, v), hxl)


def open_book(path: str):
    """An .xlsx workbook that never guesses: text stays text (never a formula, a number or a link),
    rows stream to disk."""
    import xlsxwriter

    return xlsxwriter.Workbook(path, {"constant_memory": True, "strings_to_formulas": False,
                                      "strings_to_numbers": False, "strings_to_urls": False})


def write_sheet(book, name: str, header: list[str], rows: Iterable[list], hxl: bool = False) -> int:
    """One table as a sheet of ``book``; return the number of rows under the header."""
    sheet = book.add_worksheet(name)
    bold = book.add_format({"bold": True})
    sheet.write_row(0, 0, header, bold)
    if hxl:
        sheet.write_row(1, 0, hashtag_row(header), bold)
    n = 0
    for n, row in enumerate(rows, start=1):
        for col, value in enumerate(row):
            value = _cell(value)
            if isinstance(value, str):
                sheet.write_string(n + int(hxl), col, value)
            else:
                sheet.write_number(n + int(hxl), col, value)
    return n


def _write_xlsx(receiver, name: str, path: str, hxl: bool = False) -> int:
    v = view(name)
    book = open_book(path)
    n = write_sheet(book, name, v.header, _rows(receiver, v), hxl)
    book.close()
    return n


def write_file(target: Path, fmt: str, force: bool, csv_rows: Callable[[IO[str]], int] | None,
               xlsx_rows: Callable[[str], int] | None) -> int:
    """Fill a temporary file beside ``target`` (``csv_rows`` writes CSV on a text stream,
    ``xlsx_rows`` a workbook at a path), sync it and put it in place; return the rows written."""
    target = check_target(Path(target), force)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        if fmt == "xlsx":
            os.close(fd)
            rows = xlsx_rows(tmp)
            fd = os.open(tmp, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
        else:
            with os.fdopen(fd, "w", newline="", encoding="utf-8") as out:
                rows = csv_rows(out)
                out.flush()
                os.fsync(out.fileno())
        _place(tmp, target, force)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return rows


def write_export(receiver, name: str, target: Path, fmt: str = "csv", force: bool = False, hxl: bool = False) -> int:
    """Write view ``name`` to ``target`` atomically; return the number of rows written."""
    view(name)
    return write_file(target, fmt, force, lambda out: write_csv(receiver, name, out, hxl),
                      lambda path: _write_xlsx(receiver, name, path, hxl))


def _place(tmp: str, target: Path, force: bool) -> None:
    """Rename into place; without ``force`` a hard link, which fails if the name was taken meanwhile."""
    if force:
        os.replace(tmp, target)
    else:
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise already_there(target) from None
        os.unlink(tmp)
    sync_folder(target.parent)
