"""Rich output for people: every value from outside is shown as plain text, never markup."""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from typing import Iterable, Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from core.i18n import _
from core.rules.text import Said, escape_text

from .errors import stdout_closed


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """Rich's own exits 1; a closed reader of stdout ends a table as it ends ``--json``."""
        if self.stderr:
            super().on_broken_pipe()
        self.quiet = True
        stdout_closed()


def make_console(stderr: bool = False) -> Console:
    return _Console(stderr=stderr, highlight=False, emoji=False)


def when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def safe(value: object, limit: int = 200, style: str = "") -> Text:
    """Outside text as a Rich ``Text`` (never parsed as markup), for the command line and the console.

    Printable ASCII is shown as it is (bounded); anything else goes through
    ``escape_text``, so no control byte or other script reaches a terminal.
    The store keeps reject lines and odd file names already escaped; passing
    printable ASCII through unchanged shows them once-escaped, not doubly. The program's own
    words in the operator's language (``core.rules.text.Said``) are shown as they are too.
    """
    if value is None:
        return Text("-", style="dim")
    text = str(value)
    if isinstance(value, Said) or (text.isascii() and text.isprintable()):
        shown = text if len(text) <= limit else text[:limit] + "..."
    else:
        shown = escape_text(text, limit)
    return Text(shown, style=style)


_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def assembled(template: str, **parts: object) -> Text:
    """A translated line whose ``%(name)s`` placeholders are filled with ``parts`` in whatever order
    the language puts them; a ``Text`` part (outside text through ``safe``) keeps its own form."""
    out, pos = Text(), 0
    for m in _PLACEHOLDER.finditer(template):
        out.append(template[pos:m.start()])
        part = parts[m.group(1)]
        out.append(part if isinstance(part, Text) else Text(str(part)))
        pos = m.end()
    out.append(template[pos:])
    return out


CODE_WIDTH = 32  # a code or id longer than this is folded over lines rather than crowd out other columns
FOLD_FLOOR = 16  # no word or code this long or shorter is ever broken; longer ones (ids, frames) may fold
EDGES = 1  # a table's left border; each column adds its two padding spaces and its right border
PER_COLUMN = 3


def _units(text: str, whole_lines: bool) -> list[int]:
    """The widths of what must not be broken: each line of a code, each word of free text."""
    return [cell_len(u) for line in text.split("\n") for u in ([line] if whole_lines else line.split())]


class FittedTable:
    """A table laid out for the width it is printed at, so that no word is ever broken.

    Every column is at least as wide as its longest word (header included), a code
    column (``codes``: ids, codes, times) as wide as its longest line, so an id stays on
    one line. When that does not fit, the columns named in ``drop`` are left out, first
    named first, and a caption says which. Then only values longer than ``FOLD_FLOOR``
    (long ids, frame texts, paths: no word is that long) are folded. When even that does
    not fit, each row is printed as a block of "column  value" lines instead.
    """

    def __init__(self, title: str, columns: Sequence[str], cells: list[list[Text]], codes: Sequence[str],
                 drop: Sequence[str]):
        self.title, self.columns, self.cells = title, list(columns), cells
        self.drop = [name for name in drop if name in self.columns]  # a column shown only sometimes
        self.least, self.floor, self.most, self.word = [], [], [], []
        for n, name in enumerate(self.columns):
            units = [u for row in cells for u in _units(row[n].plain, name in codes)]
            head = max(_units(name, False), default=1)
            self.least.append(max([head, 1] + [min(u, CODE_WIDTH) for u in units]))
            self.floor.append(max([head, 1] + [min(u, FOLD_FLOOR) for u in units]))
            self.word.append(max([head, 1] + [u for row in cells for u in _units(row[n].plain, False)]))
            lines = [line for row in cells for line in row[n].plain.split("\n")]
            self.most.append(max([cell_len(name)] + [cell_len(line) for line in lines]))

    def layout(self, width: int) -> tuple[list[int], dict[int, int]] | None:
        """The columns kept and each one's width in a table at most ``width`` cells wide;
        None when not even that fits (the rows are then printed as blocks)."""
        kept = list(range(len(self.columns)))
        widths = dict(enumerate(self.least))

        def room() -> int:
            return width - EDGES - PER_COLUMN * len(kept) - sum(widths[n] for n in kept)

        for name in self.drop:
            if room() >= 0:
                break
            kept.remove(self.columns.index(name))
        while room() < 0:
            foldable = [n for n in kept if widths[n] > self.floor[n]]
            if not foldable:
                return None
            # A column already folding (an id longer than CODE_WIDTH) folds further before one
            # whose values would otherwise stay whole.
            widths[max(foldable, key=lambda n: (self.word[n] > widths[n], widths[n] - self.floor[n]))] -= 1
        spare = room()
        wants = sorted((n for n in kept if self.most[n] > widths[n]), key=lambda n: self.most[n] - widths[n])
        for n in wants:  # the smallest wants first, each in full: as many columns as can be unwrapped
            give = min(self.most[n] - widths[n], spare)
            widths[n] += give
            spare -= give
        return kept, {n: widths[n] for n in kept}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        laid = self.layout(options.max_width)
        if laid is None:
            yield from self._blocks(options.max_width)
            return
        kept, widths = laid
        left_out = [name for n, name in enumerate(self.columns) if n not in kept]
        caption = (_("not shown at this width: %(columns)s (a wider terminal or --json shows them)",
                     columns=", ".join(left_out))
                   if left_out else None)
        t = Table(title=self.title, title_justify="left", caption=caption, caption_justify="left",
                  show_lines=False)
        for n in kept:
            t.add_column(self.columns[n], width=widths[n], overflow="fold")
        for row in self.cells:
            t.add_row(*(row[n] for n in kept))
        yield t

    def _blocks(self, width: int) -> RenderResult:
        """Too narrow for the columns side by side: each row as "column  value" lines, rows apart."""
        yield Text(self.title)
        names = min(max(cell_len(name) for name in self.columns), max(8, width // 3))
        for row in self.cells:
            grid = Table.grid(padding=(0, 1))
            grid.add_column(width=names, style="bold")  # a long column name wraps at its words
            grid.add_column(overflow="fold")
            for name, cell in zip(self.columns, row):
                grid.add_row(name, cell)
            yield Text("")
            yield grid
        if not self.cells:
            yield Text("(none)", style="dim")


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[object]],
          codes: Sequence[str] = (), drop: Sequence[str] = ()) -> FittedTable:
    """A table for people that never breaks a word at the width it is printed at (``FittedTable``).

    ``codes`` are the columns never split over lines (ids, codes, times); ``drop`` the
    low-value columns given up, in that order, when the terminal is too narrow."""
    cells = [[cell if isinstance(cell, Text) else safe(cell) for cell in row] for row in rows]
    return FittedTable(title, columns, cells, codes, drop)


def print_json(obj: object) -> None:
    try:
        sys.stdout.write(json.dumps(obj, default=str, ensure_ascii=True) + "\n")
    except BrokenPipeError:
        stdout_closed()
