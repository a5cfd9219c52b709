"""The Overview (o): today's arrivals per hour as a Sparkline and people by need as bars, with
their numbers in words, and r writes today's situation report and says where."""

from __future__ import annotations

from textual.widgets import ProgressBar, Sparkline

from console.dialogs.overview_screen import OverviewScreen, _people_cases, today
from core import Receiver
from core.report.figures import compute
from tests.support.console_support import fixed_app, press_and_settle, run_async, until
from tools.sample_store import FIXED_NOW


def _expected(home):
    with Receiver(str(home.db)) as r:
        return compute(r, today(FIXED_NOW), str(home.root), {}, now=FIXED_NOW)


def _text(app) -> str:
    return "\n".join(str(s.render()) for s in app.screen.query("Static, Label"))


@run_async
async def test_overview_shows_todays_figures_and_r_writes_the_report(sample_home):
    expected = _expected(sample_home)
    assert expected.cases > 0
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await press_and_settle(pilot)
        await pilot.press("o")
        await until(lambda: isinstance(app.screen, OverviewScreen) and app.screen.figures is not None,
                    what="the overview's figures")
        await pilot.pause()
        screen = app.screen
        assert list(screen.query_one("#ov-arrivals", Sparkline).data) == [n for _, n in expected.arrivals]
        bars = list(screen.query(ProgressBar))
        assert [b.progress for b in bars] == [c.people for c in expected.by_need][:len(bars)] and bars
        words = _text(app)
        assert f"{expected.cases:,} new cases, {expected.people:,} people today" in words
        for need in expected.by_need:
            assert _people_cases(need.people, need.cases) in words
        assert "r writes today's report" in words
        await pilot.press("r")
        await until(lambda: screen.written is not None, what="the report written")
        written = screen.written
        assert written.parent == sample_home.root / "reports" and written.suffix == ".html"
        assert "Situation report" in written.read_text()
        await pilot.pause()
        assert f"report written to {written}" in _text(app).replace("\n", "")
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, OverviewScreen), what="the overview closed")


async def _open_overview(pilot):
    app = pilot.app
    await press_and_settle(pilot)
    await pilot.press("o")
    await until(lambda: isinstance(app.screen, OverviewScreen) and app.screen.figures is not None,
                what="the overview's figures")
    await pilot.pause()
    await pilot.pause()


def test_overview_picture_at_80x24(snap_compare, sample_home):
    assert snap_compare(fixed_app(sample_home), terminal_size=(80, 24), run_before=_open_overview)


def test_overview_picture_under_no_color(snap_compare, sample_home, monkeypatch):
    """Under NO_COLOR the sparkline's heights and the bars' numbers still say everything."""
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(fixed_app(sample_home), terminal_size=(80, 24), run_before=_open_overview)
