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
from textual.widgets import Static

from console import actions
from console.ui_text import MEANINGS, OUTCOMES
from core.i18n import N_, _
from console.widgets.words_footer import WordsFooter

LEGEND = [
    ("! N CONFLICTS OPEN", N_("frames wait in Quarantine for an operator (also a notification and a bell)")),
    ("watch ok / DEAD / off", N_("the inbox observer (push path)")),
    ("sweep ok / off", N_("the periodic inbox sweep (pull path)")),
    ("≠", N_("Quarantine: a field where the new version differs from the first")),
    ("Enter", N_("Activity, on a reject: the whole line and what was wrong")),
    ("d", N_("hide the notifications now")),
    ("v / ^", N_("sort order: descending / ascending")),
    ("open dispatched", N_("case status: waiting / a team is on its way (both in the ranking)")),
    ("served closed", N_("case status: aid delivered / no action needed (out of the ranking)")),
    ("! DISPUTED", N_("an open conflict concerns the case: settle it before acting on its figures")),
    ("key NAME unlocked", N_("the signing session holds NAME's key; ctrl+l locks it")),
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
    table.add_row(Text(_("Who may sign what"), style="bold underline"), "")
    for action_id, role, what in actions.who_may():
        table.add_row(Text(action_id), Text(_("needs the %(role)s role (%(what)s)", role=role, what=_(what))))
    table.add_row(Text(""), Text(_("An admin grants a role: %(command)s", command="ussd-console operator grant NAME ROLE"),
                                style="dim"))
    return table


def sections(keymap: Mapping[str, str] | None = None) -> list[tuple[str, list[tuple[str, str, str]]]]:
    return [(actions.scope_title(scope), actions.help_rows(scope, keymap)) for scope in actions.SCOPE_TITLES]


class HelpScreen(ModalScreen[None]):
    CSS_PATH = Path(__file__).with_name("dialogs.tcss")

    BINDINGS = [
        Binding("escape,q", "dismiss", N_("Close")),
        Binding("question_mark", "dismiss", N_("Close"), id="help"),  # the help key, wherever it is moved
    ]

    def __init__(self, keymap: Mapping[str, str] | None = None):
        super().__init__()
        self.keymap = dict(keymap or {})
        self.sections = sections(self.keymap)

    def compose(self):
        help_key = actions.key_label(actions.keys_of(actions.BY_ID["help"], self.keymap))
        palette_key = actions.key_label(actions.keys_of(actions.BY_ID["palette"], self.keymap))
        with Vertical(classes="dialog"):
            yield Static(Text(_("Keys (Esc or %(help_key)s closes; %(palette_key)s finds any action by name). "
                                "The middle column is the id that [console.keys] in config.toml remaps.",
                                help_key=help_key, palette_key=palette_key), style="bold"))
            with VerticalScroll():
                for title, rows in self.sections:
                    yield Static(section(title, rows))
                yield Static(who_may_table())
                yield Static(self._legend())
        yield WordsFooter()  # the help screen's own keys, not the screen's under it

    def _legend(self) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(min_width=12, style="bold")
        table.add_column()
        table.add_row(Text(_("What the marks mean"), style="bold underline"), "")
        for mark, meaning in LEGEND:
            table.add_row(Text(mark), Text(_(meaning)))
        for code, (label, _style) in OUTCOMES.items():
            table.add_row(Text(_(label)), Text(_(MEANINGS[code])))
        return table

    def action_dismiss(self) -> None:
        self.dismiss(None)
