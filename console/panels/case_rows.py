"""What the screens that list cases share (Cases, Ranking): the selected case, the mark keys,
and Enter for the case's history."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import DataTable

from console.widgets.keyed_table import KeyedTable

MARK_BINDINGS = [
    Binding("D", "mark('dispatched')", "Dispatched"),
    Binding("S", "mark('served')", "Served"),
    Binding("C", "mark('closed')", "Closed", show=False),
    Binding("O", "mark('open')", "Re-open", show=False),
]


class CaseRows:
    """A mixin of a ``Panel`` whose ``show`` keeps ``self.rows`` (row key -> case row)."""

    rows: dict[str, dict]

    def selected(self) -> dict | None:
        key = self.query_one(KeyedTable).cursor_key
        return self.rows.get(key) if key is not None else None

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "mark":
            return True if self.app.dialog("mark") is not None else None
        return True

    def action_mark(self, to: str) -> None:
        self.app.mark_case(self.selected(), to)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.app.open_case(case_id=int(event.row_key.value))
