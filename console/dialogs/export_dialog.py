"""Choose a view and a format to export (key e); the console writes it under ``<home>/exports``.

The choice is a mark, ``(•)`` or ``( )``, never a colour alone. The view list has the keyboard
first and arrows move the choice itself; Tab goes on to the formats and the Export button. Enter
exports wherever the focus is and Escape cancels. Cancel is a button for the mouse only, so Tab and
Space can never cancel by accident.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, RadioButton, RadioSet, Static

from console.export_views import VIEWS
from core.i18n import _, N_
from core.rules.text import escape_text
from console.widgets.words_footer import WordsFooter

FORMAT_LABELS = {"csv": "CSV", "xlsx": "XLSX (Excel)"}
CHOSEN, NOT_CHOSEN = "(•)", "( )"


class Choice(RadioButton):
    """A radio button that says its state by a mark: ``(•)`` chosen, ``( )`` not."""

    @property
    def _button(self) -> Content:
        return Content.styled(CHOSEN if self.value else NOT_CHOSEN, "bold" if self.value else "")


class ChoiceSet(RadioSet):
    """Arrows move the choice (not only a cursor); Enter is left to the dialog, which exports.

    The arrows are this set's own bindings, and each move starts from the choice itself, not from
    wherever the cursor was left: keys typed the moment the dialog is drawn choose just as later ones
    do (an earlier version waited for a refresh before arrows chose, and a fast Tab, Down only moved
    the cursor).
    """

    BINDINGS = [
        Binding("down,right", "choose(1)", "Next", show=False),
        Binding("up,left", "choose(-1)", "Previous", show=False),
        Binding("space", "toggle_button", "Choose", show=False),  # and not Enter: that exports
    ]

    def on_mount(self) -> None:
        self.call_after_refresh(self._start)  # after RadioSet's own mount, which puts the cursor first

    def _start(self) -> None:
        if self.pressed_index >= 0:
            self._selected = self.pressed_index  # the cursor is drawn on the choice, not on the first line

    def action_choose(self, step: int) -> None:
        if self.pressed_index >= 0:
            self._selected = self.pressed_index
        if step > 0:
            super().action_next_button()
        else:
            super().action_previous_button()
        self.action_toggle_button()

    @property
    def chosen(self) -> str:
        pressed = self.pressed_button
        return pressed.name if pressed is not None else ""


class ExportDialog(ModalScreen[tuple[str, str] | None]):
    """Dismisses with ``(view, format)``, or None when cancelled."""

    CSS_PATH = Path(__file__).with_name("dialogs.tcss")
    BINDINGS = [
        Binding("escape", "cancel", N_("Cancel")),
        Binding("enter", "export", N_("Export"), priority=True),
        Binding("ctrl+s", "export", "Export", show=False),
    ]

    def __init__(self, view: str, folder: Path):
        super().__init__()
        self.view = view if view in VIEWS else "ranking"
        self.folder = folder

    def compose(self):
        with Vertical(classes="dialog", id="export-box"):
            yield Static(Text(_("Export a view"), style="bold"), id="dialog-title")
            with Horizontal(id="export-choices"):
                with ChoiceSet(id="export-view") as views:
                    views.border_title = _("view")
                    for name, v in VIEWS.items():
                        yield Choice(_("%(view)s: %(what)s", view=name, what=_(v.title)), value=name == self.view,
                                     name=name)
                with ChoiceSet(id="export-format") as formats:
                    formats.border_title = _("format")
                    for fmt, label in FORMAT_LABELS.items():
                        yield Choice(label, value=fmt == "csv", name=fmt)
            yield Static(Text(_("Written to %(folder)s/ with the time in its name.\n"
                                "Arrows choose; Tab: view or format; Enter exports; Esc cancels.",
                                folder=escape_text(self.folder, 60))),
                         id="dialog-body")
            with Horizontal(id="dialog-buttons"):
                yield Button(_("Export (enter)"), id="export", variant="primary")
                cancel = Button(_("Cancel (esc)"), id="cancel")
                cancel.can_focus = False  # Tab never lands here, so Space or Enter never cancels unseen
                yield cancel
        yield WordsFooter()  # the dialog's own keys, not the screen's under it

    def on_mount(self) -> None:
        # The view list first: arrows choose at once, as the hint says (focus on the button made
        # Down do nothing, and Enter then exported the view the dialog opened on).
        self.query_one("#export-view", ChoiceSet).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "export":
            self.action_export()
        else:
            self.action_cancel()

    def action_export(self) -> None:
        view = self.query_one("#export-view", ChoiceSet).chosen or self.view
        fmt = self.query_one("#export-format", ChoiceSet).chosen or "csv"
        self.dismiss((view, fmt))

    def action_cancel(self) -> None:
        self.dismiss(None)
