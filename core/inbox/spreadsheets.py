"""Spreadsheet exports (``.xlsx``, ``.ods``) as rows, through python-calamine.

Only the first sheet is read; the pure readers then treat its rows exactly
like a CSV's (``core.rules.formats.table_items``) and the archive keeps a CSV
of it without phone columns (``core.rules.scrub.scrub_table``). Calamine is a
Rust reader, fast enough for a 100,000-row export and strict about broken
files; it lives here rather than in ``core/rules`` because it is a parsing
library with its own I/O, not a pure rule.
"""

from __future__ import annotations

import io
import zipfile

from core.rules.formats import FormatError

# Both formats are zip archives; an archive that unpacks to far more than it weighs is refused.
UNPACKED_RATIO = 40


def sheet_rows(data: bytes, max_bytes: int) -> list[list[object]]:
    """The first sheet's rows (cells as str, int, float, bool, dates); ``FormatError`` if unreadable."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise FormatError(f"not a spreadsheet (a broken or partial archive: {exc.__class__.__name__})") from None
    if unpacked > max(max_bytes, len(data) * UNPACKED_RATIO):
        raise FormatError(f"over the size limit when unpacked ({unpacked} bytes)")
    from python_calamine import CalamineWorkbook

    try:
        book = CalamineWorkbook.from_filelike(io.BytesIO(data))
        if not book.sheet_names:
            raise FormatError("the spreadsheet has no sheet")
        return book.get_sheet_by_index(0).to_python(skip_empty_area=False)
    except FormatError:
        raise
    except Exception as exc:  # noqa: BLE001 - calamine's errors are many classes; each means "unreadable"
        raise FormatError(f"not a readable spreadsheet ({exc.__class__.__name__})") from None
