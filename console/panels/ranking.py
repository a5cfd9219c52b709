"""Ranking: the dispatch order of open and dispatched cases, headcount by need and by site.

Each row says its status and, when an open conflict concerns the case, DISPUTED:
a delivery team never acts on a figure an operator has not settled. Enter opens
the case's history; D, S, C and O mark it (signed).
"""

from __future__ import annotations

import time
from typing import NamedTuple

from rich.text import Text
from textual.containers import Horizontal, Vertical

from core.i18n import _, language, N_, SOURCE
from console.render import safe
from console.ui_text import day_only, number, stamp, status
from console.widgets.bars import Bars
from console.widgets.keyed_table import KeyedTable
from core.store.records import HeadcountGroup, RankedCase

from console import actions

from .case_rows import CaseRows
from .panel import PAGE, SLOW_FACTOR, InfoLine, Panel, window_text

COLUMNS = [
    ("rank", N_("rank")),
    ("frame_id", N_("frame id")),
    ("site", N_("site")),
    ("need", N_("need")),
    ("headcount", N_("people")),
    ("pri", N_("pri")),
    ("status", N_("status")),
    ("first_seen", N_("first seen")),
]
BARS_LIMIT = 50  # groups fetched for the bars; the widget shows the largest few
KEEP_ROWS = 10  # under the table (80 columns), the bars give way before the table shows fewer rows


class HeadcountBars(NamedTuple):
    """People by need and by site, and what reading them cost (they scan every case)."""

    by_need: list[HeadcountGroup]
    by_site: list[HeadcountGroup]
    cost: float


class RankingData(NamedTuple):
    """One load of the Ranking screen: a page of the dispatch order, and the bars when they were due."""

    rows: list[RankedCase]
    total: int
    bars: HeadcountBars | None


def bars_fit(height: int, rows: int, bars: int) -> bool:
    """Whether the bars (``bars`` lines) go under the table in a panel ``height`` lines high, with
    the table still showing its ``rows`` (up to ``KEEP_ROWS``) below the info line and its header."""
    return height - bars >= 2 + min(rows, KEEP_ROWS)


class RankingPanel(CaseRows, Panel):
    TAB_ID = "ranking"
    TITLE = N_("Ranking")
    EXPORT_VIEW = "ranking"
    BINDINGS = actions.bindings(TAB_ID)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.bars_version: int | None = None
        self.bars_at = 0.0
        self.bars_cost = 0.0
        self.rows: dict[str, RankedCase] = {}

    def compose(self):
        with Horizontal(id="ranking-body"):
            with Vertical(id="ranking-main"):
                yield InfoLine(id="ranking-info")
                # A date with two digits for its day gives up its time before the table runs past its edge;
                # in a language with longer headers the date goes whole rather than show cut at the edge.
                drop = () if language() == SOURCE else ("first_seen",)
                yield KeyedTable(COLUMNS, drop=drop, shorten={"first_seen": day_only}, id="ranking-table")
            with Horizontal(id="ranking-bars"):
                yield Bars(_("People by need"), limit=5, id="bars-need")
                yield Bars(_("People by site"), limit=5, id="bars-site")

    def params(self):
        return (self.page_offset,)

    def on_resize(self) -> None:
        self._fit_bars()

    def _fit_bars(self) -> None:
        """At 80 columns, while notifications take their band, the ranking keeps its rows and the
        bars go (they come back with the room); beside the table they always stay."""
        bars = self.query_one("#ranking-bars")
        lines = max(b.lines() for b in self.query(Bars))
        bars.display = not self.screen.has_class("-narrow") or bars_fit(self.size.height, len(self.rows), lines)

    def plan(self, version, force, now):
        """The page is cheap (an index walk); the bars scan every case, so they wait longer."""
        params = super().plan(version, force, now)
        bars_due = force or self.bars_version is None or self._bars_wait(version) == 0
        if params is None and not bars_due:
            return None
        return (*self.params(), bars_due)

    def _bars_wait(self, version: int) -> float | None:
        if version == self.bars_version:
            return None
        wait = max(self.MIN_INTERVAL, SLOW_FACTOR * self.bars_cost)
        return max(0.0, wait - (time.monotonic() - self.bars_at))

    def wait_left(self, version: int) -> float | None:
        waits = [w for w in (super().wait_left(version), self._bars_wait(version)) if w is not None]
        return min(waits) if waits else None

    def loaded(self, params, version, now, started, data):
        if data.bars is not None:
            self.bars_version = version
            self.bars_at = time.monotonic()
            self.bars_cost = data.bars.cost
        super().loaded(params[:-1], version, now, started, data)

    @staticmethod
    def load(receiver, params, now) -> RankingData:
        offset, with_bars = params
        rows, total, bars = receiver.ranking(limit=PAGE, offset=offset), receiver.count_ranked(), None
        if with_bars:
            started = time.monotonic()
            by_need = receiver.headcount_by("need", limit=BARS_LIMIT, include_done=False)
            by_site = receiver.headcount_by("site", limit=BARS_LIMIT, include_done=False)
            bars = HeadcountBars(by_need, by_site, time.monotonic() - started)
        return RankingData(rows, total, bars)

    def show(self, data: RankingData) -> None:
        self.total = data.total
        rows = data.rows
        self.rows = {str(c.id): c for c in rows}
        self.query_one(KeyedTable).sync([
            (str(c.id), (
                number(c.rank), safe(c.frame_id, 64), safe(c.site, 8), safe(c.need, 8),
                number(c.headcount), number(c.pri), status(c.status, c.disputed), Text(stamp(c.first_seen)),
            ))
            for c in rows
        ])
        if data.bars is not None:
            self.query_one("#bars-need", Bars).rows = tuple((r.key, r.headcount) for r in data.bars.by_need)
            self.query_one("#bars-site", Bars).rows = tuple((r.key, r.headcount) for r in data.bars.by_site)
        self._fit_bars()
        info = window_text(self.page_offset, len(rows), self.total, N_("dispatch order"))
        info.append(" | " + _("highest pri(ority) first; Enter: history"), style="dim")
        self.query_one("#ranking-info", InfoLine).update(info)
