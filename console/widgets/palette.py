"""The command palette: every action of the actions table, found by its title (in the operator's
language or in English) or by the words an
operator would type ("resolve", "conflict", "history", "backup"), without the emoji badge (many
SSH terminals draw the magnifier badly or as two cells)."""

from __future__ import annotations

from rich.text import Text
from textual.command import CommandPalette, Hit, Hits, SearchIcon
from textual.system_commands import SystemCommandsProvider

from console import actions


class PlainPalette(CommandPalette):
    ICON = ">"

    def on_mount(self) -> None:
        self.query_one(SearchIcon).icon = self.ICON


class ActionsProvider(SystemCommandsProvider):
    """The app's commands (``get_system_commands``), each also found by its action's synonyms:
    a title that does not match may still be the action the operator means."""

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        by_title = {a.shown_title: a for a in actions.ACTIONS}  # in the language chosen for this run
        for name, help_text, callback, *_ in self.app.get_system_commands(self.screen):
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
                continue
            action = by_title.get(name)
            if action is None:
                continue
            word_scores = [(matcher.match(word), word) for word in actions.matching_words(action)]
            best, word = max(word_scores, default=(0, ""))
            if best > 0:
                # Below a match on the title itself, and saying which word found it.
                label = Text(name)
                label.append(f"  ({word})", style="dim")
                yield Hit(best * 0.9, label, callback, help=help_text)
