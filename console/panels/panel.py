"""What every screen of the console shares: when to reload, and the split of work.

A panel is one tab. ``load`` is a static function that runs on the store
thread and returns plain data; ``show`` puts that data on screen on the UI
thread. ``plan`` decides, on each tick of the refresh loop, whether a load is
due: when the operator changed what the panel shows (page, sort, filter),
when the store changed since the panel last loaded, or when the clock made
the panel's view of time stale. A load that proved slow on a big store is
repeated less often, so a steady trickle of frames cannot keep a core busy.

Keep this split: no query ever runs on the UI thread, and ``show`` hands rows
to ``KeyedTable.sync``, which updates them in place by key so the operator's
cursor and scroll stay put while the store changes underneath.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar, Hashable, NamedTuple

from rich.text import Text
from textual.actions import SkipAction
from textual.containers import Vertical
from textual.widgets import Static, TabbedContent

from console import actions
from console.messages import ExportRequest, RefreshRequest
from console.ui_text import count
from console.widgets.keyed_table import KeyedTable
from core.i18n import _

PAGE = 200  # rows a table holds at most: one window of the store, never the whole table
SLOW_FACTOR = 4  # a load that took t seconds waits at least SLOW_FACTOR * t before it repeats


class Page(NamedTuple):
    """One window of rows and how many the store holds: what a paged screen loads."""

    rows: list
    total: int


class InfoLine(Static):
    """One line above a table: what window of how much, and how it is ordered."""

    DEFAULT_CSS = """
    InfoLine { height: 1; width: 1fr; }
    """


class Panel(Vertical):
    """The keys every screen with a table shares (pages, first and last row) are bound here once,
    from the actions table; a panel's own keys come from the same table under its ``TAB_ID``."""

    TAB_ID: ClassVar[str] = ""
    TITLE: ClassVar[str] = ""
    EXPORT_VIEW: ClassVar[str | None] = None  # what ``e`` exports from this screen
    MIN_INTERVAL: ClassVar[float] = 1.0
    BINDINGS = actions.bindings("tables")

    def __init__(self, **kwargs):
        super().__init__(id=f"panel-{self.TAB_ID}", **kwargs)
        self.loaded_params: Hashable = None
        self.loaded_version: int | None = None
        self.loaded_minute: int | None = None
        self.loaded_at = 0.0
        self.cost = 0.0
        self.busy = False
        self.page_offset = 0  # first row of the window this panel shows
        self.total = 0  # rows the store holds for this panel, as of the last load

    # -- the refresh protocol ------------------------------------------------------
    def params(self) -> Hashable:
        """What the operator chose to see (page, sort, filter, selection)."""
        return ()

    def minute_bound(self) -> bool:
        """True when what the panel shows depends on the current minute (rates, due times)."""
        return False

    def plan(self, version: int, force: bool, now: float) -> Hashable | None:
        params = self.params()
        minute = int(now // 60)
        if force or params != self.loaded_params or self.loaded_version is None:
            return params
        if self.minute_bound() and minute != self.loaded_minute:
            return params
        if version != self.loaded_version and self.wait_left(version) == 0:
            return params
        return None

    def wait_left(self, version: int) -> float | None:
        """Seconds before a load the store asks for may run (None: nothing to load).

        A load that proved slow waits ``SLOW_FACTOR`` times its cost, so a
        steady trickle of frames cannot keep the store thread busy; the app
        comes back when the wait is over, so nothing stays stale.
        """
        if version == self.loaded_version:
            return None
        wait = max(self.MIN_INTERVAL, SLOW_FACTOR * self.cost)
        return max(0.0, wait - (time.monotonic() - self.loaded_at))

    # Every panel defines these two: ``load`` runs on the store thread and returns
    # plain data; ``show`` puts that data on screen on the UI thread.
    @staticmethod
    def load(receiver, params: Any, now: float) -> Any:
        raise TypeError("a console panel must define load(receiver, params, now)")

    def show(self, data: Any) -> None:
        raise TypeError(f"{type(self).__name__} must define show(data)")

    def loaded(self, params: Hashable, version: int, now: float, started: float, data: Any) -> None:
        """Record the load and show it, unless the operator has moved on meanwhile."""
        self.cost = time.monotonic() - started
        self.loaded_at = time.monotonic()
        self.loaded_version = version
        self.loaded_minute = int(now // 60)
        if params == self.params():
            self.loaded_params = params
            self.show(data)

    def focus_main(self) -> None:
        """Give the keyboard to the panel's main widget when the panel is shown.

        The first table on display, whether this runs before the panel's first ``show`` or
        after it: a table ``show`` hides (Retention's empty exceptions) then never holds the
        focus, and the focus does not depend on which of the two came first on a busy machine.
        """
        table = next((t for t in self.query("KeyedTable") if t.display), None)
        if table is not None:
            table.focus()

    def watch_loading(self, loading: bool) -> None:
        """The loading indicator covers the panel and hides its table, and Textual takes the keyboard
        from a widget it hides, leaving it nowhere: a slow first load (a big store) left the tab's
        keys doing nothing. Once the indicator is gone, the shown panel's table takes it back."""
        if not loading:
            self.call_after_refresh(self._focus_after_load)

    def _focus_after_load(self) -> None:
        if not self.is_mounted or self.loading or self.screen.focused is not None:
            return  # the operator has moved the focus meanwhile (a filter box, another tab's table)
        tabs = next((node for node in self.ancestors if isinstance(node, TabbedContent)), None)
        if tabs is not None and tabs.active == self.TAB_ID:
            self.focus_main()

    # -- the keys of every panel -------------------------------------------------------
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """Pages only where the table is a window of the store (hidden from the footer elsewhere)."""
        if action == "page":
            return self.TAB_ID in actions.PAGED
        if action == "export":
            return self.EXPORT_VIEW is not None
        return True

    def action_page(self, step: int) -> None:
        """Move the window by a page of the store (keys ``[`` and ``]``)."""
        offset = self.page_offset + step * PAGE
        if 0 <= offset < max(self.total, 1):
            self.page_offset = offset
            self.request_refresh()

    def focused_table(self):
        """The table of this panel that has the keyboard; else the key is left to whoever has it
        (Home and End in the filter box move its cursor)."""
        focused = self.screen.focused
        if not isinstance(focused, KeyedTable) or focused not in self.query(KeyedTable):
            raise SkipAction()
        return focused

    def action_first_row(self) -> None:
        table = self.focused_table()
        if table.row_count:
            table.move_cursor(row=0)

    def action_last_row(self) -> None:
        """The last row of the window, never a sideways scroll (DataTable's own End)."""
        table = self.focused_table()
        if table.row_count:
            table.move_cursor(row=table.row_count - 1)

    def action_rows_up(self) -> None:
        self.focused_table().action_page_up()

    def action_rows_down(self) -> None:
        self.focused_table().action_page_down()

    def action_export(self) -> None:
        self.post_message(ExportRequest(self.EXPORT_VIEW))

    def request_refresh(self) -> None:
        """What the panel shows changed (page, sort, filter): ask the app for a load."""
        self.post_message(RefreshRequest())


def window_text(offset: int, shown: int, total: int, what: str) -> Text:
    """Say which window of how many rows is shown, e.g. "cases 1-200 of 12,345"."""
    what = _(what)  # a word kept marked (N_) by the panel
    if not shown:
        if total:
            return Text(_("%(what)s: none (of %(total)s)", what=what, total=count(total)))
        return Text(_("%(what)s: none", what=what))
    return Text(_("%(what)s %(first)s-%(last)s of %(total)s", what=what, first=count(offset + 1),
                  last=count(offset + shown), total=count(total)))
