"""Headcount as horizontal bars, sized to the widget: readable without colour."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from console.ui_text import bar, count
from core.rules.text import escape_text

LABEL_MAX = 10


class Bars(Widget):
    DEFAULT_CSS = """
    Bars { height: auto; min-height: 2; }
    """

    rows: reactive[tuple] = reactive((), layout=True)

    def __init__(self, title: str, limit: int = 8, **kwargs):
        super().__init__(**kwargs)
        self.title = title
        self.limit = limit

    def render(self) -> Text:
        width = max(self.size.width, 20)
        rows = list(self.rows)
        out = Text(self.title, style="bold", no_wrap=True, overflow="crop")
        if not rows:
            out.append("\n  none yet", style="dim")
            return out
        shown = rows[: self.limit]
        total = sum(r[1] for r in rows)
        largest = max(r[1] for r in shown)
        labels = [escape_text(r[0], 40)[:LABEL_MAX] for r in shown]
        label_w = max(len(label) for label in labels)
        num_w = max(len(count(r[1])) for r in shown)
        bar_w = max(width - label_w - num_w - 7, 4)
        for label, (_key, people) in zip(labels, shown):
            share = f"{people * 100 / total:3.0f}%" if total else "   -"
            out.append("\n")
            out.append(label.ljust(label_w) + " ")
            out.append(bar(people, largest, bar_w).ljust(bar_w))
            out.append(f" {count(people):>{num_w}} {share}")
        if len(rows) > len(shown):
            out.append(f"\n  ... {len(rows) - len(shown)} more", style="dim")
        return out

    def lines(self) -> int:
        """The lines it takes: the title, the groups shown, and "... N more"."""
        rows = len(self.rows)
        return 1 + max(1, min(rows, self.limit)) + (1 if rows > self.limit else 0)

    def get_content_height(self, container, viewport, width: int) -> int:
        return self.lines()
