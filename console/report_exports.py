"""The report's tables as data (``report --format csv|xlsx [--hxl]``), through the export writers.

CSV is a folder with one file per table: HXL readers (libhxl, the HXL Proxy, HDX's previews) take
one table per file, each with its own header and hashtag row. XLSX is one workbook with a sheet per
table, what an information officer opens. Both are put in place whole: the workbook as any export,
the folder filled under a temporary name beside it and renamed, so nobody reads half of one.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from pathlib import Path

from console.errors import CommandError
from core.i18n import _
from console.exports import already_there, check_target, open_book, write_file, write_sheet, write_table_csv
from core.home import private_folder, sync_folder
from core.report.tables import TABLE_NAMES, DataTable
from core.rules.cells import mask_phones

FORMATS = ("csv", "xlsx")


OWN_COLUMNS = frozenset({"checkpoint"})  # the home's own words: a hash's digits are not a phone number


def _masked(t: DataTable) -> list[list]:
    """No phone number in a cell of outside text, whatever reached the model (the writers guard
    formulas)."""
    own = [c in OWN_COLUMNS for c in t.header]
    return [[mask_phones(x) if isinstance(x, str) and not mine else x for x, mine in zip(row, own)]
            for row in t.rows]


def default_target(folder: Path, fmt: str, now: float) -> Path:
    """``<folder>/report-<time>.xlsx`` or the folder ``<folder>/report-<time>/``, numbered when
    taken; ``folder`` made 0700."""
    private_folder(folder)
    stamp = dt.datetime.fromtimestamp(now).strftime("%Y%m%d-%H%M%S")
    suffix = ".xlsx" if fmt == "xlsx" else ""
    target, n = folder / f"report-{stamp}{suffix}", 2
    while target.exists() or target.is_symlink():
        target, n = folder / f"report-{stamp}-{n}{suffix}", n + 1
    return target


def _check_folder(target: Path, force: bool) -> Path:
    """A new folder's name; an existing one only with ``force`` and only if it holds nothing but
    the tables' own CSVs (a folder of other files is never emptied on a guess)."""
    if target.is_symlink():
        raise CommandError.told(_("%(path)s is a symlink; refusing to write through it"), path=target)
    if not target.parent.is_dir():
        raise CommandError.told(_("the folder %(path)s does not exist; create it first"), path=target.parent)
    if target.exists():
        if not target.is_dir():
            raise CommandError.told(_("%(path)s is a file; --format csv writes a folder of tables, give a new name"),
                                    path=target)
        if not force:
            raise already_there(target)
        ours = {f"{name}.csv" for name in TABLE_NAMES}
        other = sorted(p.name for p in target.iterdir() if p.name not in ours or not p.is_file() or p.is_symlink())
        if other:
            raise CommandError.told(_("%(path)s holds other files (%(files)s); refusing to replace it"), path=target,
                                        files=", ".join(other[:3]))
    return target


def _write_folder(tables: list[DataTable], target: Path, force: bool, hxl: bool) -> None:
    target = _check_folder(target, force)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    old = None
    try:
        for t in tables:
            fd = os.open(tmp / f"{t.name}.csv", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", newline="", encoding="utf-8") as out:
                write_table_csv(out, t.header, _masked(t), hxl)
                out.flush()
                os.fsync(out.fileno())
        sync_folder(tmp)
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            os.replace(target, old)  # the old tables aside (an empty folder is replaced by a rename)
        os.rename(tmp, target)
    except BaseException:
        if old is not None and not target.exists():
            os.replace(old, target)
            old = None
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    sync_folder(target.parent)


def check_tables_target(target: Path, fmt: str, force: bool) -> Path:
    """Refuse a bad target before any figure is computed (and again as it is written)."""
    return _check_folder(target, force) if fmt == "csv" else check_target(target, force)


def _write_book(tables: list[DataTable], path: str, hxl: bool) -> int:
    book = open_book(path)
    for t in tables:
        write_sheet(book, t.name, t.header, _masked(t), hxl)
    book.close()
    return len(tables)


def write_tables(tables: list[DataTable], target: Path, fmt: str, force: bool = False, hxl: bool = False) -> Path:
    """Write every table as ``fmt`` at ``target`` (a folder for CSV, a file for XLSX)."""
    if fmt not in FORMATS:
        raise CommandError.told(_("the report's tables are %(formats)s, not %(given)s"), {"formats": " or ".join(FORMATS)},
                                given=repr(fmt))
    target = Path(target)
    if fmt == "csv":
        _write_folder(tables, target, force, hxl)
    else:
        write_file(target, "xlsx", force, None, lambda path: _write_book(tables, path, hxl))
    return target
