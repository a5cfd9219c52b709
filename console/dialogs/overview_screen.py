"""The Overview (o): arrivals per hour as a sparkline and people by need as bars, for today, drawn
with Textual's own widgets (``Sparkline``, ``ProgressBar``) with every number written beside
them, so it reads at 80x24 and under NO_COLOR; r writes today's situation report and says where.

The figures are the situation report's own (``core.report.figures``), read on the store thread.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, ProgressBar, Sparkline, Static

from console import actions
from console.render import assembled, safe
from core.i18n import N_, _, ngettext, number
from core.report import labels
from core.report.period import Period
from core.rules.frame import NEED_NAMES
from core.rules.text import said
from console.widgets.words_footer import WordsFooter

NEEDS_SHOWN = 6


def today(now: float) -> Period:
    """From local midnight to now: "today" as the operator's clock says it."""
    midnight = dt.datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
    return Period(midnight, max(now, midnight + 1))


def _targets(home) -> list[str]:
    from core.alerts import load_alerts_config

    try:
        return sorted(load_alerts_config(home.config).targets)
    except ValueError:
        return []


def _figures(receiver, home, now: float):
    from core.report.figures import compute

    return compute(receiver, today(now), str(home.root), {}, now=now)


def _write(receiver, home, now: float):
    from core.report.write import default_target, write_report

    target = default_target(Path(home.root) / "reports", "html", now)
    return write_report(home, receiver, today(now), "html", target, _targets(home), now)


def _need_name(code: str, label: str) -> Text:
    """A known need by its name in the operator's language; any other by the label the store has."""
    if code in NEED_NAMES:
        return Text(labels.need(code))
    return safe(label, 12)


def _people_cases(people: int, cases: int) -> str:
    return _("%(people)s, %(cases)s", people=ngettext("%(n)s person", "%(n)s people", people, n=number(people)),
             cases=ngettext("%(n)s case", "%(n)s cases", cases, n=number(cases)))


class OverviewScreen(ModalScreen[None]):
    CSS_PATH = Path(__file__).with_name("overview_screen.tcss")
    BINDINGS = [Binding("escape,q", "close", N_("Close")), *actions.bindings("overview")]

    def __init__(self):
        super().__init__()
        self.figures = None
        self.written: Path | None = None

    def compose(self):
        with Vertical(id="overview-box"):
            with VerticalScroll(id="overview-scroll"):
                yield Static(Text(_("reading today's figures..."), style="dim"), id="overview-head")
                yield Label(_("Arrivals per hour"), id="ov-arrivals-title", classes="title")
                yield Sparkline([], id="ov-arrivals")
                yield Static("", id="ov-arrivals-scale")
                yield Label(_("People by need"), id="ov-needs-title", classes="title")
                yield Vertical(id="ov-needs")
                yield Static("", id="overview-note")
        yield WordsFooter()

    def on_mount(self) -> None:
        self.query_one("#overview-box").border_title = _("overview: today")
        self.load()

    @work(exclusive=True, group="overview")
    async def load(self) -> None:
        now = self.app.clock()
        f = await self.app.view.run(lambda r: _figures(r, self.app.home, now))
        self.figures = f
        by = {c.key: c.cases for c in f.by_status}
        self.query_one("#overview-head", Static).update(Text(_(
            "%(cases)s new cases, %(people)s people today | open %(open)s, dispatched %(dispatched)s, "
            "served %(served)s, closed %(closed)s | conflicts open %(conflicts)s",
            cases=number(f.cases), people=number(f.people), open=number(by.get("open", 0)),
            dispatched=number(by.get("dispatched", 0)), served=number(by.get("served", 0)),
            closed=number(by.get("closed", 0)), conflicts=number(f.conflicts["still_open"]))))
        counts = [n for _, n in f.arrivals]
        self.query_one("#ov-arrivals", Sparkline).data = counts
        busiest = max(range(len(counts)), key=counts.__getitem__) if any(counts) else None
        until = dt.datetime.fromtimestamp(f.until).strftime("%H:%M")
        if busiest is not None:
            scale = _("00:00 .. %(until)s, one bar an hour; most %(n)s at %(hour)s", until=until,
                      n=number(counts[busiest]), hour=dt.datetime.fromtimestamp(f.arrivals[busiest][0]).strftime("%H:00"))
        else:
            scale = _("00:00 .. %(until)s, one bar an hour; most none: no arrivals yet today", until=until)
        self.query_one("#ov-arrivals-scale", Static).update(Text(scale, style="dim"))
        needs = self.query_one("#ov-needs", Vertical)
        await needs.remove_children()
        top = max((c.people for c in f.by_need), default=0) or 1
        rows = []
        for c in f.by_need[:NEEDS_SHOWN]:
            bar = ProgressBar(total=top, show_eta=False, show_percentage=False, classes="need-bar")
            bar.progress = c.people
            rows.append(Horizontal(Label(_need_name(c.key, c.label), classes="need-name"), bar,
                                   Label(_people_cases(c.people, c.cases), classes="need-count"),
                                   classes="need-row"))
        if rows:
            await needs.mount_all(rows)
        else:
            await needs.mount(Label(_("none yet today"), classes="need-count"))
        self._say()

    def _say(self) -> None:
        key = actions.key_label(actions.keys_of(actions.BY_ID["write_report"], getattr(self.app, "keymap", {})))
        # Our words as they are (accents included); the file's name is outside text.
        words = assembled(_("%(key)s writes today's report (HTML) to the home's reports/"), key=key)
        if self.written is not None:
            words = assembled(_("report written to %(file)s"), file=safe(str(self.written), 600))
        self.query_one("#overview-note", Static).update(words)

    def action_close(self) -> None:
        self.dismiss(None)

    @work(exclusive=True, group="overview-report")
    async def action_write_report(self) -> None:
        now = self.app.clock()
        try:
            done = await self.app.view.run(lambda r: _write(r, self.app.home, now))
        except Exception as exc:  # noqa: BLE001 - a full disk or a planted link is said, never a crash
            self.notify(_("The report could not be written: %(error)s", error=said(exc, 160)), severity="error", markup=False)
            return
        self.written = done.file
        self._say()
        self.notify(_("Report written to %(file)s (%(cases)s, %(people)s)", file=done.file,
                      cases=ngettext("%(n)s case", "%(n)s cases", done.cases, n=number(done.cases)),
                      people=ngettext("%(n)s person", "%(n)s people", done.people, n=number(done.people))),
                    title=_("Report"), markup=False)
