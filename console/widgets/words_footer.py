"""The footer in the operator's language: the bindings keep their English words (their ids and
``[console.keys]`` stay the same in every language), and the footer says them translated."""

from __future__ import annotations

from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from core.i18n import _


class WordsFooter(Footer):
    def compose(self):
        for widget in super().compose():
            if isinstance(widget, FooterKey) and widget.description:
                widget.description = _(widget.description)
            yield widget
