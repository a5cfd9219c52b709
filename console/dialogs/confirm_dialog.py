"""A yes/no question before anything that changes the store (y, n, Escape)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from console.widgets.words_footer import WordsFooter
from core.i18n import N_, _


class ConfirmDialog(ModalScreen[bool]):
    CSS_PATH = Path(__file__).with_name("dialogs.tcss")

    BINDINGS = [
        Binding("y", "answer(True)", N_("Yes")),
        Binding("n", "answer(False)", N_("No")),
        Binding("escape", "answer(False)", N_("Cancel")),
    ]

    def __init__(self, title: str, body: Text | str, yes: str = N_("Yes"), no: str = N_("No")):
        """``title``, ``yes`` and ``no`` come marked (N_) or already in the operator's words."""
        super().__init__()
        self.title_text = _(title)
        self.body = body if isinstance(body, Text) else Text(body)
        self.yes, self.no = _(yes), _(no)

    def compose(self):
        with Vertical(id="dialog", classes="dialog"):
            yield Static(Text(self.title_text, style="bold"), id="dialog-title")
            yield Static(self.body, id="dialog-body")
            with Horizontal(id="dialog-buttons"):
                yield Button(f"{self.yes} (y)", id="yes", variant="error")
                yield Button(f"{self.no} (n)", id="no", variant="primary")
        yield WordsFooter()  # the dialog's own keys, not the screen's under it

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
