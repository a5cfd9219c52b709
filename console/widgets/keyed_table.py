"""A DataTable that holds one bounded window of rows and refreshes them by key.

DataTable measures every cell it holds, so a widget never holds a whole table:
each panel gives ``sync`` one page (a few hundred rows at most) queried from
SQLite. ``sync`` changes only the cells that differ when the rows are the
same; when rows come or go it rebuilds the window and puts the cursor back on
the row the operator was on, at the same height on the screen, so a live
refresh never jumps the operator back to the top.
"""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.widgets import DataTable


class KeyedTable(DataTable):
    DEFAULT_CSS = """
    KeyedTable { height: 1fr; }
    """

    def __init__(self, columns: Sequence[tuple[str, str]], **kwargs):
        """``columns`` are ``(key, label)`` pairs."""
        kwargs.setdefault("cursor_type", "row")
        kwargs.setdefault("zebra_stripes", False)
        super().__init__(**kwargs)
        self._column_spec = list(columns)
        self._cells: dict[str, tuple] = {}
        self._order: list[str] = []
        # Columns exist from the start (not on mount), so rows synced before the
        # table's own mount are measured against them.
        for key, label in self._column_spec:
            self.add_column(Text(label), key=key)

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
        for column, cells in zip(self.ordered_columns, zip(*(cells for _, cells in rows))):
            widest = max((cell.cell_len if isinstance(cell, Text) else len(str(cell)) for cell in cells), default=0)
            column.content_width = max(column.content_width, widest)

    def sync(self, rows: Sequence[tuple[str, tuple]]) -> None:
        """Show exactly ``rows`` (``(key, cells)`` in order), keeping the operator's place."""
        keys = [key for key, _ in rows]
        if keys == self._order:
            columns = [key for key, _ in self._column_spec]
            self._fit_columns(rows)
            for key, cells in rows:
                old = self._cells.get(key)
                if old == cells:
                    continue
                for column, before, after in zip(columns, old or (), cells):
                    if before != after:
                        self.update_cell(key, column, after, update_width=True)
                self._cells[key] = cells
            return
        anchor = self.cursor_key
        cursor_row = self.cursor_row
        screen_row = cursor_row - round(self.scroll_y)
        self.clear()
        self._fit_columns(rows)
        for key, cells in rows:
            self.add_row(*cells, key=key)
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
