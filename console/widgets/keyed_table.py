"""A DataTable that holds one bounded window of rows and refreshes them by key.

DataTable measures every cell it holds, so a widget never holds a whole table:
each panel gives ``sync`` one page (a few hundred rows at most) queried from
SQLite. ``sync`` changes only the cells that differ when the rows are the
same; when rows come or go it rebuilds the window and puts the cursor back on
the row the operator was on, at the same height on the screen, so a live
refresh never jumps the operator back to the top.

A table wider than its widget is laid out again for the width (``fit_columns``):
the columns a panel names go first, then the ones it lets shorten are shortened
visibly ("…", a time to the minute); the others are never cut at the right edge,
so a frame id or a number is always whole on an 80-column terminal.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable

from console import actions
from core.i18n import _


Shorten = Callable[[Text, int], Text]  # a cell made at most this wide, saying that it was shortened
PADDING = 2  # DataTable's cell padding, one space each side of a column


def fit_columns(widths: Sequence[int], least: Sequence[int], room: int, drop: Sequence[int],
                shorten: Sequence[int]) -> tuple[list[int], dict[int, int]]:
    """The columns kept at ``room`` cells and the width each shortened one gets.

    ``widths``: each column's widest cell (header included); ``least``: the narrowest a
    shortenable column may be. The columns in ``drop`` go first, in that order, while the
    table is wider than ``room``; then the ``shorten`` ones give up what is still missing,
    each down to its least. Every other column (ids, numbers) stays whole: when even
    that does not fit, the table scrolls sideways rather than cut one."""
    kept = list(range(len(widths)))

    def over(limits: Mapping[int, int]) -> int:
        return sum(limits.get(n, widths[n]) + PADDING for n in kept) - room

    for n in drop:
        if over({}) <= 0:
            break
        kept.remove(n)
    limits: dict[int, int] = {}
    for n in shorten:
        missing = over(limits)
        if missing <= 0 or n not in kept:
            continue
        limits[n] = max(least[n], widths[n] - missing)
    return kept, {n: w for n, w in limits.items() if w < widths[n]}


def shorten_middle(text: Text, width: int, keep_end: str = "") -> Text:
    """``text`` at most ``width`` cells: its start and its end with "…" between. A suffix that
    starts with ``keep_end`` (":12", a line number) is always kept whole."""
    plain = text.plain
    if cell_len(plain) <= width:
        return text
    cut = plain.rfind(keep_end) if keep_end else -1
    head, tail = (plain[:cut], plain[cut:]) if cut > 0 else (plain, "")
    room = max(width - len(tail) - 1, 2)
    if len(head) <= room + 1:
        return text  # no shorter with an ellipsis in it
    front = (room + 1) // 2
    return Text(head[:front] + "…" + head[len(head) - (room - front):] + tail, style=text.style)


class KeyedTable(DataTable):
    DEFAULT_CSS = """
    KeyedTable { height: 1fr; }
    """

    def __init__(self, columns: Sequence[tuple[str, str]], drop: Sequence[str] = (),
                 shorten: Mapping[str, Shorten] | None = None, **kwargs):
        """``columns`` are ``(key, label)`` pairs. A table wider than the widget gives up the
        columns in ``drop`` (in that order), then shortens the ``shorten`` ones (key -> how),
        so that no column is cut at the widget's edge (``fit_columns``)."""
        kwargs.setdefault("cursor_type", "row")
        kwargs.setdefault("zebra_stripes", False)
        super().__init__(**kwargs)
        self._column_spec = [(key, _(label)) for key, label in columns]  # the operator's language
        self._drop = [k for k in drop]
        self._shorten = dict(shorten or {})
        self._cells: dict[str, tuple] = {}
        self._order: list[str] = []
        self._fit: tuple[tuple[int, ...], tuple] = (tuple(range(len(self._column_spec))), ())
        # Columns exist from the start (not on mount), so rows synced before the
        # table's own mount are measured against them.
        for key, label in self._column_spec:
            self.add_column(Text(label), key=key)

    def values(self, column: str) -> list:
        """A column's cells in row order, whole, whether the column is shown at this width or not."""
        n = [key for key, _ in self._column_spec].index(column)
        return [self._cells[key][n] for key in self._order]

    @property
    def shown_columns(self) -> list[str]:
        """The keys of the columns shown at the table's width now."""
        return [self._column_spec[n][0] for n in self._fit[0]]

    def _fitting(self, rows: Sequence[tuple[str, tuple]]) -> tuple[tuple[int, ...], tuple]:
        """Which columns are shown, and how wide the shortened ones are, for ``rows`` at this width."""
        width = self.size.width
        if not (self._drop or self._shorten) or width <= 0:
            return self._fit if width <= 0 else (tuple(range(len(self._column_spec))), ())
        keys = [key for key, _ in self._column_spec]
        widths = [max([cell_len(label)] + [cell.cell_len if isinstance(cell, Text) else cell_len(str(cell))
                                           for _, cells in rows for cell in cells[n:n + 1]])
                  for n, (_, label) in enumerate(self._column_spec)]
        # A shortened column is never narrower than its header or than its cells shortened the most.
        least = [max([cell_len(label)] + [self._shorten[key](cell, 0).cell_len for _, cells in rows
                                          for cell in cells[n:n + 1] if isinstance(cell, Text)]
                     if key in self._shorten else [cell_len(label)])
                 for n, (key, label) in enumerate(self._column_spec)]
        scrolls = len(rows) + (self.header_height if self.show_header else 0) > self.size.height
        room = width - (self.styles.scrollbar_size_vertical if scrolls else 0)  # the scrollbar's cells
        kept, limits = fit_columns(widths, least, room, [keys.index(k) for k in self._drop],
                                   [keys.index(k) for k in self._shorten])
        return tuple(kept), tuple(sorted(limits.items()))

    def _shown(self, cells: tuple) -> tuple:
        kept, limits = self._fit
        limit = dict(limits)
        out = []
        for n in kept:
            cell = cells[n] if n < len(cells) else Text("")
            if n in limit and isinstance(cell, Text):
                cell = self._shorten[self._column_spec[n][0]](cell, limit[n])
            out.append(cell)
        return tuple(out)

    def _refit(self, rows: Sequence[tuple[str, tuple]]) -> bool:
        """Lay the columns out for ``rows``; True when they changed (the rows are then added again)."""
        fit = self._fitting(rows)
        if fit == self._fit:
            return False
        self._fit = fit
        self.clear(columns=True)  # new columns: a column's width only grows while it lives
        for n in fit[0]:
            key, label = self._column_spec[n]
            self.add_column(Text(label), key=key)
        return True

    def on_resize(self) -> None:
        """A new width may keep other columns: lay the rows out again, keeping the operator's place."""
        if self._drop or self._shorten:
            self.sync([(key, self._cells[key]) for key in self._order])

    @property
    def row_keys(self) -> list[str]:
        return list(self._order)

    @property
    def cursor_key(self) -> str | None:
        """The key of the row under the cursor, if any."""
        if not self._order or not 0 <= self.cursor_row < len(self._order):
            return None
        return self._order[self.cursor_row]

    def _fit_columns(self, rows: Sequence[tuple[str, tuple]]) -> None:
        """Size the columns for the new window before its rows go in.

        DataTable measures new rows later, when idle; a frame drawn before that
        would show clipped cells (and could stay cached), so set the widths now.
        """
        for column, cells in zip(self.ordered_columns, zip(*(self._shown(cells) for _, cells in rows))):
            widest = max((cell.cell_len if isinstance(cell, Text) else len(str(cell)) for cell in cells), default=0)
            column.content_width = max(column.content_width, widest)

    def sync(self, rows: Sequence[tuple[str, tuple]]) -> None:
        """Show exactly ``rows`` (``(key, cells)`` in order), keeping the operator's place."""
        keys = [key for key, _ in rows]
        anchor = self.cursor_key
        cursor_row = self.cursor_row
        screen_row = cursor_row - round(self.scroll_y)
        refitted = self._refit(rows)
        if keys == self._order and not refitted:
            columns = self.shown_columns
            self._fit_columns(rows)
            for key, cells in rows:
                old = self._cells.get(key)
                if old == cells:
                    continue
                for column, before, after in zip(columns, self._shown(old) if old else (), self._shown(cells)):
                    if before != after:
                        self.update_cell(key, column, after, update_width=True)
                self._cells[key] = cells
            return
        self.clear()
        self._fit_columns(rows)
        for key, cells in rows:
            self.add_row(*self._shown(cells), key=key)
        self._cells = dict(rows)
        self._order = keys
        if not keys:
            return
        try:
            target = keys.index(anchor) if anchor is not None else min(cursor_row, len(keys) - 1)
        except ValueError:
            target = min(cursor_row, len(keys) - 1)
        self.move_cursor(row=target, scroll=False)
        top = max(0, target - max(0, screen_row))
        self.call_after_refresh(self.scroll_to, y=top, animate=False, immediate=True)


class CaseTable(KeyedTable):
    """The Cases table: its footer says that Enter opens the case's history."""

    BINDINGS = actions.table_bindings("cases")
