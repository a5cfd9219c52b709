"""The console's main screen: the header, one tab per panel and the footer.

The first panel is built at once, the others when first shown (``Lazy``), so the console opens
as fast as one screen allows. The app's queries land here (Textual queries the default screen),
and a dialog or the case's history is pushed over it.
"""

from __future__ import annotations

from textual import on
from textual.css.query import NoMatches
from textual.lazy import Lazy
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane

from core.i18n import _

from .panels import PANELS, Panel
from .widgets.header_bar import HeaderBar
from console.widgets.words_footer import WordsFooter


class MainScreen(Screen):
    def __init__(self, home_label: str, clock, **kwargs):
        super().__init__(**kwargs)
        self.home_label = home_label
        self.clock = clock

    def compose(self):
        yield HeaderBar(self.home_label, clock=self.clock, id="header")
        with TabbedContent(id="tabs", initial=PANELS[0].TAB_ID):
            for n, panel in enumerate(PANELS, start=1):
                with TabPane(f"{n} {_(panel.TITLE)}", id=panel.TAB_ID):
                    yield panel() if n == 1 else Lazy(panel())
        yield WordsFooter()

    def on_mount(self) -> None:
        self.panel().focus_main()
        self.app.begin()

    def panel(self, tab_id: str | None = None) -> Panel:
        tab_id = tab_id or self.query_one(TabbedContent).active
        return self.query_one(f"#panel-{tab_id}", Panel)

    def mounted_panel(self, tab_id: str | None = None) -> Panel | None:
        """The panel, or None in the moment before a lazily mounted one arrives."""
        try:
            return self.panel(tab_id)
        except NoMatches:
            return None

    def header_bar(self) -> HeaderBar | None:
        """The header, or None while the app is taken down: a timer can still fire after its widgets went."""
        return next(iter(self.query(HeaderBar)), None)

    def show_panel(self, tab_id: str) -> None:
        self.query_one(TabbedContent).active = tab_id
        self._focus_panel(tab_id)

    def _focus_panel(self, tab_id: str) -> None:
        panel = self.mounted_panel(tab_id)
        if panel is not None:
            panel.focus_main()
        else:
            self.set_timer(0.05, lambda: self._focus_panel(tab_id))

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.app.request_refresh()
