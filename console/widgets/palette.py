"""The command palette without its emoji: many SSH terminals draw the magnifier badly or as two cells."""

from __future__ import annotations

from textual.command import CommandPalette, SearchIcon


class PlainPalette(CommandPalette):
    ICON = ">"

    def on_mount(self) -> None:
        self.query_one(SearchIcon).icon = self.ICON
