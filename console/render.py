"""Rich output for people: every value from outside is shown as plain text, never markup."""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Iterable, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from core.rules.text import escape_text


def make_console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, emoji=False)


def when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def safe(value: object, limit: int = 200, style: str = "") -> Text:
    """Outside text as a Rich ``Text`` (never parsed as markup), for the command line and the console.

    Printable ASCII is shown as it is (bounded); anything else goes through
    ``escape_text``, so no control byte or other script reaches a terminal.
    The store keeps reject lines and odd file names already escaped; passing
    printable ASCII through unchanged shows them once-escaped, not doubly.
    """
    if value is None:
        return Text("-", style="dim")
    text = str(value)
    if text.isascii() and text.isprintable():
        shown = text if len(text) <= limit else text[:limit] + "..."
    else:
        shown = escape_text(text, limit)
    return Text(shown, style=style)


CODE_WIDTH = 32  # a code or id longer than this is cut with "...", never split over lines


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[object]],
          codes: Sequence[str] = ()) -> Table:
    """A table for people. Columns named in ``codes`` (ids, codes, times) are never split over
    lines: they keep their widest cell's width and the free-text columns wrap around them."""
    cells = [[cell if isinstance(cell, Text) else safe(cell) for cell in row] for row in rows]
    t = Table(title=title, title_justify="left", show_lines=False)
    for n, col in enumerate(columns):
        if col in codes:
            widest = max((len(line) for row in cells for cell in row[n:n + 1] for line in cell.plain.split("\n")),
                         default=0)
            t.add_column(col, no_wrap=True, overflow="ellipsis", min_width=min(max(widest, len(col)), CODE_WIDTH))
        else:
            t.add_column(col, overflow="fold")
    for row in cells:
        t.add_row(*row)
    return t


def print_json(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, default=str, ensure_ascii=True) + "\n")
