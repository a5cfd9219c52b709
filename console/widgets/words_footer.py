"""The footer in the operator's language: the bindings keep their English words (their ids and
``[console.keys]`` stay the same in every language), and the footer says them translated.

Textual's footer rebuilds all its keys whenever the screen's bindings are looked at again (each
focus move, each screen shown), though mostly the same keys come back; each rebuild mounts a
dozen widgets and lays out the screen. This one rebuilds only when what it would show differs."""

from __future__ import annotations

from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from core.i18n import _


class WordsFooter(Footer):
    _shown: tuple | None = None

    def compose(self):
        for widget in super().compose():
            if isinstance(widget, FooterKey) and widget.description:
                widget.description = _(widget.description)
            yield widget

    def bindings_changed(self, screen) -> None:
        shown = _what_shows(screen)
        if self._bindings_ready and shown == self._shown and self.is_attached and screen is self.screen:
            return
        super().bindings_changed(screen)
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._shown = shown


def _what_shows(screen) -> tuple:
    """All the footer's compose reads from the bindings, in their order."""
    return tuple((key, binding.key, binding.action, binding.description, binding.show, binding.group,
                  binding.tooltip, enabled, tooltip)
                 for key, (_node, binding, enabled, tooltip) in screen.active_bindings.items())
