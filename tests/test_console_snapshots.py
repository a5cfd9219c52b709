"""Pictures of every screen at 80x24 and 120x36, on the sample store with a fixed clock.

Update after a deliberate change with ``pytest tests/test_console_snapshots.py
--snapshot-update`` and look at the report before committing.
"""

from __future__ import annotations

import pytest

from console.dialogs.case_screen import CaseScreen
from tests.support.console_support import fixed_app, press_and_settle, until
from tools.sample_store import add_lifecycle

SIZES = {"80x24": (80, 24), "120x36": (120, 36)}
SCREENS = {"cases": "1", "ranking": "2", "quarantine": "3", "retention": "4", "activity": "5", "help": "question_mark"}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen(snap_compare, sample_home, screen, size):
    app = fixed_app(sample_home)

    async def run_before(pilot):
        await press_and_settle(pilot, SCREENS[screen])

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


def test_no_color(snap_compare, sample_home, monkeypatch):
    """With NO_COLOR the badge and the marks still say everything in words."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = fixed_app(sample_home)

    async def run_before(pilot):
        await press_and_settle(pilot, "3")

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


@pytest.fixture
def lifecycle_home(sample_home):
    """The sample store with kak01-1 dispatched while its correction waits, and dad01-1 served."""
    return add_lifecycle(sample_home)


def test_ranking_with_disputed_and_dispatched_rows(snap_compare, lifecycle_home):
    app = fixed_app(lifecycle_home)

    async def run_before(pilot):
        await press_and_settle(pilot, "2")

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_case_history(snap_compare, lifecycle_home):
    """Enter on kak01-1 (third in the ranking): its version, its marks, the conflict about it."""
    app = fixed_app(lifecycle_home)

    async def run_before(pilot):
        await press_and_settle(pilot, "2", "down", "down", "enter")
        await until(lambda: isinstance(app.screen, CaseScreen) and app.screen.story is not None)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
