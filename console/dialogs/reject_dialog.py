"""One rejected line in full: where it came from, what was wrong, and the whole line, escaped."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from console.render import assembled, safe
from console.ui_text import stamp
from core.i18n import _, N_
from core.rules.explain import explain_reject, outcome_words
from core.store.records import Reject
from console.widgets.words_footer import WordsFooter


def reject_details(row: Reject) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(_("What was wrong"), Text(explain_reject(row.frame_id, row.frame_text, row.reason),
                                        style="bold"))
    grid.add_row(_("Outcome"), Text(outcome_words(row.outcome)))
    grid.add_row(_("File"), safe(row.file, 300))
    grid.add_row(_("Line"), Text("-" if row.line is None else str(row.line)))
    grid.add_row(_("Frame id"), safe(row.frame_id, 200))
    grid.add_row(_("Arrived"), assembled(_("%(when)s via %(path)s"), when=stamp(row.ts), path=safe(row.source, 16)))
    grid.add_row(_("The line"), safe(row.frame_text, 1000))  # whole, escaped: control bytes show as \\x1b
    return grid


class RejectDialog(ModalScreen[None]):
    CSS_PATH = Path(__file__).with_name("dialogs.tcss")
    BINDINGS = [Binding("escape,enter,q", "close", N_("Close"))]

    def __init__(self, row: dict):
        super().__init__()
        self.row = row

    def compose(self):
        with Vertical(id="dialog", classes="dialog"):
            yield Static(Text(_("Rejected line"), style="bold"), id="dialog-title")
            with VerticalScroll(id="reject-body"):  # a long line scrolls; Close stays in view at 80x24
                yield Static(reject_details(self.row), id="dialog-body")
            with Horizontal(id="dialog-buttons"):
                yield Button(_("Close (esc)"), id="close", variant="primary")
        yield WordsFooter()  # the dialog's own keys, not the screen's under it

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)
