"""The ``?`` screen: every action of the actions table, its id and the key in force (after
``[console.keys]``), and who may sign what; built from the table, so it cannot drift."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from console import actions
from console.ui_text import MEANINGS, OUTCOMES

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


def section(title: str, rows: list[tuple[str, str, str]]) -> Group:
    """One screen's actions: keys, id (for ``[console.keys]``), what it does."""
    table = Table.grid(padding=(0, 1))
    table.add_column(min_width=9, style="bold")
    table.add_column(style="dim")
    table.add_column()
    for keys, action_id, what in rows:
        table.add_row(Text(keys), Text(action_id), Text(what))
    return Group(Text(title, style="bold underline"), table)


def who_may_table() -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(min_width=9, style="bold")
    table.add_column()
    table.add_row(Text("Who may sign what", style="bold underline"), "")
    for action_id, role, what in actions.who_may():
        table.add_row(Text(action_id), Text(f"needs the {role} role ({what})"))
    table.add_row(Text(""), Text("An admin grants a role: ussd-console operator grant NAME ROLE", style="dim"))
    return table


def sections(keymap: Mapping[str, str] | None = None) -> list[tuple[str, list[tuple[str, str, str]]]]:
    return [(title, actions.help_rows(scope, keymap)) for scope, title in actions.SCOPE_TITLES.items()]


class HelpScreen(ModalScreen[None]):
    CSS_PATH = Path(__file__).with_name("dialogs.tcss")

    BINDINGS = [
        Binding("escape,q", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", id="help"),  # the help key, wherever it is moved
    ]

    def __init__(self, keymap: Mapping[str, str] | None = None):
        super().__init__()
        self.keymap = dict(keymap or {})
        self.sections = sections(self.keymap)

    def compose(self):
        help_key = actions.key_label(actions.keys_of(actions.BY_ID["help"], self.keymap))
        palette_key = actions.key_label(actions.keys_of(actions.BY_ID["palette"], self.keymap))
        with Vertical(classes="dialog"):
            yield Static(Text(f"Keys (Esc or {help_key} closes; {palette_key} finds any action by name). "
                              "The middle column is the id that [console.keys] in config.toml remaps.",
                              style="bold"))
            with VerticalScroll():
                for title, rows in self.sections:
                    yield Static(section(title, rows))
                yield Static(who_may_table())
                yield Static(self._legend())
        yield Footer()  # the help screen's own keys, not the screen's under it

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
