"""The ``?`` screen: every key, built from the bindings themselves so it cannot drift."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from console.ui_text import MEANINGS, OUTCOMES

KEY_NAMES = {
    "slash": "/",
    "question_mark": "?",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "escape": "Esc",
    "enter": "Enter",
}

LEGEND = [
    ("! N CONFLICTS OPEN", "frames wait in Quarantine for an operator (also a notification and a bell)"),
    ("watch ok / DEAD / off", "the inbox observer (push path)"),
    ("sweep ok / off", "the periodic inbox sweep (pull path)"),
    ("≠", "Quarantine: a field where the new version differs from the first"),
    ("Enter", "Activity, on a reject: the whole line and what was wrong"),
    ("d", "hide the notifications now"),
    ("v / ^", "sort order: descending / ascending"),
    ("open dispatched", "case status: waiting / a team is on its way (both in the ranking)"),
    ("served closed", "case status: aid delivered / no action needed (out of the ranking)"),
    ("! DISPUTED", "an open conflict concerns the case: settle it before acting on its figures"),
    ("key NAME unlocked", "the signing session holds NAME's key; ctrl+l locks it"),
]


def key_label(binding: Binding) -> str:
    if binding.key_display:
        return binding.key_display
    keys = [KEY_NAMES.get(k.strip(), k.strip()) for k in binding.key.split(",")]
    return " ".join(keys)


def section(title: str, bindings: Iterable[Binding]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(min_width=12, style="bold")
    table.add_column()
    table.add_row(Text(title, style="bold underline"), "")
    for b in bindings:
        if b.description:
            table.add_row(key_label(b), b.description)
    return table


class HelpScreen(ModalScreen[None]):
    CSS_PATH = Path(__file__).with_name("dialogs.tcss")

    BINDINGS = [
        Binding("escape,question_mark,q", "dismiss", "Close"),
    ]

    def __init__(self, sections: list[tuple[str, list[Binding]]]):
        super().__init__()
        self.sections = sections

    def compose(self):
        with Vertical(classes="dialog"):
            yield Static(Text("Keys (Esc or ? closes; ctrl+p finds any action by name)", style="bold"))
            with VerticalScroll():
                for title, bindings in self.sections:
                    yield Static(section(title, bindings))
                yield Static(self._legend())

    def _legend(self) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(min_width=12, style="bold")
        table.add_column()
        table.add_row(Text("What the marks mean", style="bold underline"), "")
        for mark, meaning in LEGEND:
            table.add_row(Text(mark), Text(meaning))
        for code, (label, _style) in OUTCOMES.items():
            table.add_row(Text(label), Text(MEANINGS[code]))
        return table

    def action_dismiss(self) -> None:
        self.dismiss(None)
