"""What the screens that list cases share (Cases, Ranking): the selected case, the mark keys,
and Enter for the case's history."""

from __future__ import annotations

from textual.widgets import DataTable

from console.messages import MarkRequest, OpenCase
from console.widgets.keyed_table import KeyedTable
from core.store.records import Case, RankedCase


class CaseRows:
    """A mixin of a ``Panel`` whose ``show`` keeps ``self.rows`` (row key -> case row)."""

    rows: dict[str, Case | RankedCase]

    def selected(self) -> Case | RankedCase | None:
        key = self.query_one(KeyedTable).cursor_key
        return self.rows.get(key) if key is not None else None

    def action_mark(self, to: str) -> None:
        self.post_message(MarkRequest(self.selected(), to))

    def action_history(self) -> None:
        case = self.selected()
        self.post_message(OpenCase(case_id=case.id if case else None))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.post_message(OpenCase(case_id=int(event.row_key.value)))
