"""Cases: the applied ledger, one page at a time, sortable and filterable.

Every case is here whatever its status (the status column says it, and
DISPUTED while an open conflict concerns it). Enter opens its history; D, S, C
and O mark it (signed).
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.containers import Horizontal
from textual.widgets import DataTable, Input

from core.i18n import N_, SOURCE, _, language
from console.render import safe
from console.ui_text import need, need_code, number, short_stamp, stamp, status
from console.widgets.keyed_table import CaseTable, KeyedTable
from core.store.records import Case

from console import actions

from .case_rows import CaseRows
from .panel import PAGE, InfoLine, Page, Panel, window_text

COLUMNS = [
    ("frame_id", N_("frame id")),
    ("site", N_("site")),
    ("need", N_("need")),
    ("headcount", N_("people")),
    ("pri", N_("pri")),
    ("status", N_("status")),
    ("first_seen", N_("seen")),  # first seen: a time today, a month-day before (whole stamp when wide)
    ("version", N_("ver")),
    ("source", N_("path")),
]
# Column -> the store's sort. "first seen" sorts by arrival (row order): the same
# order, and instant on a store of a million cases where a sort on the time is not.
SORTS = {
    "first_seen": "arrival",
    "frame_id": "frame_id",
    "site": "site",
    "need": "need",
    "headcount": "headcount",
    "pri": "pri",
}
SORT_CYCLE = ["first_seen", "pri", "headcount", "site", "need", "frame_id"]
SORT_NAMES = dict(COLUMNS) | {"first_seen": N_("first seen"), "pri": N_("pri(ority)")}
FILTER_SETTLE = 0.25  # seconds after the last key before the filter applies: one query per pause, not per key
NARROW_PATH = 8  # at 80 columns: the path's first characters (cli, watch, sweep, gw_...)


def closed_up(text: Text, width: int) -> Text:
    """"23 Mar" as "23Mar" when wider than ``width``: the one cell a tight row at 80 columns may
    still be missing."""
    if text.cell_len <= width:
        return text
    return Text(text.plain.replace(" ", ""), style=text.style)


SHORTEN = {"first_seen": closed_up}
# In a language whose headers are longer than the English ones, the path goes whole at 80 columns
# rather than show cut at the edge (it is in the case's history); in English the seen column
# closes up first and everything fits.
LONGER_WORDS_DROP = ("source",)


class CasesPanel(CaseRows, Panel):
    TAB_ID = "cases"
    TITLE = N_("Cases")
    EXPORT_VIEW = "cases"
    BINDINGS = actions.bindings(TAB_ID)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.sort = "first_seen"
        self.descending = True
        self.filter = ""
        self.rows: dict[str, Case] = {}
        self._filter_timer = None

    def compose(self):
        with Horizontal(classes="panel-top"):
            yield InfoLine(id="cases-info")
            yield Input(placeholder=_("/ filter: site, need or id"), id="cases-filter", max_length=64)
        drop = () if language() == SOURCE else LONGER_WORDS_DROP
        yield CaseTable(COLUMNS, drop=drop, shorten=SHORTEN, id="cases-table")

    def params(self):
        return (self.sort, self.descending, self.filter, self.page_offset)

    @staticmethod
    def load(receiver, params, now) -> Page:
        sort, descending, text, offset = params
        text = text or None
        if sort == "first_seen":
            rows = receiver.cases_by_arrival(limit=PAGE, offset=offset, descending=descending, filter=text)
        else:
            rows = receiver.cases(limit=PAGE, offset=offset, sort=SORTS[sort], descending=descending, filter=text)
        return Page(rows, receiver.count_cases(text))

    def show(self, data: Page) -> None:
        self.total = data.total
        table = self.query_one(KeyedTable)
        self.rows = {str(c.id): c for c in data.rows}
        # At 80 columns the need's name goes (its code stays; history and the filter know the name),
        # so that "open ! DISPUTED", the version and the path fit whole.
        narrow = self.app.size.width < 110
        now = self.app.clock()
        table.sync([
            (str(c.id), (
                safe(c.frame_id, 64), safe(c.site, 8), need_code(c.need) if narrow else need(c.need),
                number(c.headcount), number(c.pri), status(c.status, c.disputed),
                Text(short_stamp(c.first_seen, now) if narrow else stamp(c.first_seen)), number(c.version),
                safe(c.source, NARROW_PATH if narrow else 16),
            ))
            for c in data.rows
        ])
        self._show_info(len(data.rows))

    def _show_info(self, shown: int | None = None) -> None:
        shown = len(self.query_one(KeyedTable).row_keys) if shown is None else shown
        info = window_text(self.page_offset, shown, self.total, N_("cases"))
        arrow = "v" if self.descending else "^"
        info.append(" | " + _("sort %(column)s %(arrow)s", column=_(SORT_NAMES[self.sort]), arrow=arrow), style="dim")
        if self.filter:
            info.append(" | " + _("filter") + " ", style="dim")
            info.append_text(safe(self.filter, 24, style="bold"))
        if self.busy:
            info.append(" | " + _("loading..."), style="italic")
        self.query_one("#cases-info", InfoLine).update(info)

    # -- actions ---------------------------------------------------------------------
    def action_filter(self) -> None:
        self.query_one("#cases-filter", Input).focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#cases-filter", Input)
        if box.value or self.filter:
            box.value = ""
            if self._filter_timer is not None:
                self._filter_timer.stop()
            self._set_filter("")
        self.query_one(KeyedTable).focus()

    @on(Input.Changed, "#cases-filter")
    def _typed(self, event: Input.Changed) -> None:
        """The filter applies as the operator types, once the keys pause (Enter applies it at once)."""
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = self.set_timer(FILTER_SETTLE, self._filter_from_box)

    def _filter_from_box(self) -> None:
        """The box's text when the pause is over, not when the key came: Textual queues a timer's
        callback as it fires, so it may run after a later Escape or Enter stopped the timer, and
        text kept from before would then bring back a filter the operator had just cleared."""
        self._set_filter(self.query_one("#cases-filter", Input).value.strip())

    @on(Input.Submitted, "#cases-filter")
    def _submitted(self, event: Input.Submitted) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._set_filter(event.value.strip())
        self.query_one(KeyedTable).focus()

    def _set_filter(self, text: str) -> None:
        if text != self.filter:
            self.filter = text
            self.page_offset = 0
            self.request_refresh()

    def action_next_sort(self) -> None:
        self._sort_by(SORT_CYCLE[(SORT_CYCLE.index(self.sort) + 1) % len(SORT_CYCLE)])

    def action_reverse(self) -> None:
        self.descending = not self.descending
        self.page_offset = 0
        self.request_refresh()

    def _sort_by(self, column: str) -> None:
        if column not in SORTS:
            return
        if column == self.sort:
            self.descending = not self.descending
        else:
            self.sort = column
            self.descending = column not in ("site", "need", "frame_id")
        self.page_offset = 0
        self.request_refresh()

    @on(DataTable.HeaderSelected, "#cases-table")
    def _header(self, event: DataTable.HeaderSelected) -> None:
        self._sort_by(event.column_key.value)

