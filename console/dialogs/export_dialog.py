"""Choose a view and a format to export (key e); the console writes it under ``<home>/exports``."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, RadioButton, RadioSet, Static

from console.export_views import VIEWS
from core.rules.text import escape_text

FORMAT_LABELS = {"csv": "CSV", "xlsx": "Excel (.xlsx)"}


class ExportDialog(ModalScreen[tuple[str, str] | None]):
    """Dismisses with ``(view, format)``, or None when cancelled."""

    CSS_PATH = Path(__file__).with_name("dialogs.tcss")
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "export", "Export"),
    ]

    def __init__(self, view: str, folder: Path):
        super().__init__()
        self.view = view if view in VIEWS else "ranking"
        self.folder = folder

    def compose(self):
        with Vertical(classes="dialog", id="export-box"):
            yield Static(Text("Export a view", style="bold"), id="dialog-title")
            with Horizontal(id="export-choices"):
                with RadioSet(id="export-view"):
                    for name, v in VIEWS.items():
                        yield RadioButton(f"{name}: {v.title}", value=name == self.view, name=name)
                with RadioSet(id="export-format"):
                    for fmt, label in FORMAT_LABELS.items():
                        yield RadioButton(label, value=fmt == "csv", name=fmt)
            yield Static(Text(f"written to {escape_text(self.folder, 60)}/ with the time in its name"),
                         id="dialog-body")
            with Horizontal(id="dialog-buttons"):
                yield Button("Export (ctrl+s)", id="export", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#export", Button).focus()

    def _chosen(self, set_id: str) -> str:
        pressed = self.query_one(f"#{set_id}", RadioSet).pressed_button
        return pressed.name if pressed is not None else ""

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "export":
            self.action_export()
        else:
            self.action_cancel()

    def action_export(self) -> None:
        self.dismiss((self._chosen("export-view") or self.view, self._chosen("export-format") or "csv"))

    def action_cancel(self) -> None:
        self.dismiss(None)
