"""Pictures of every screen at 80x24 and 120x36, on the sample store with a fixed clock.

Update after a deliberate change with ``pytest tests/test_console_snapshots.py
--snapshot-update`` and look at the report before committing.
"""

from __future__ import annotations

import pytest

from console.dialogs.case_screen import CaseScreen
from tests.support.console_support import fixed_app, press_and_settle, until
from tools.sample_store import FIXED_NOW, add_lifecycle

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


# -- at 80x24, nothing cut; a dialog's own footer; an error gone with its cause ----------------------
LONG_FILE = "lodwar-2026-12-02-morning-session-resend.txt"


def test_activity_with_a_long_file_name_at_80_columns(snap_compare, sample_home):
    """The feed leaves out its path and shortens times and file names; ids and line numbers stay whole."""
    from core import Receiver

    with Receiver(str(sample_home.db)) as r:
        r.ingest_many([("lod01-1", "H1|1|Lodwar1|WAT|15|88|#00", LONG_FILE, 12)], now=FIXED_NOW - 60,
                      source="cli")
    app = fixed_app(sample_home)

    async def run_before(pilot):
        await press_and_settle(pilot, "5")

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_quarantine_with_resolved_too_at_80_columns(snap_compare, sample_home):
    app = fixed_app(sample_home)

    async def run_before(pilot):
        await press_and_settle(pilot, "3", "t")

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_ranking_with_notifications_at_80_columns(snap_compare, sample_home):
    """The demo's notes take their band; the bars give way and the ten rows stay in view."""
    app = fixed_app(sample_home)

    async def run_before(pilot):
        await press_and_settle(pilot, "2")
        for n in (1, 2):
            app.notify("No receipt, so Kakuma re-sends the whole session: the first frame is a duplicate.",
                       title=f"Gateway {n}/10: kakuma-0800-b.txt", timeout=600, markup=False)
        await until(lambda: not app.query_one("#ranking-bars").display)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


async def _resolve_dialog(pilot):
    from console.dialogs.resolve_dialog import ResolveDialog

    app = pilot.app
    await press_and_settle(pilot, "3", "k")
    await until(lambda: isinstance(app.screen, ResolveDialog))
    dialog = app.screen
    await until(lambda: dialog.query_one("#operator").value == "alice")
    return dialog


def test_signing_dialog_shows_its_own_keys_in_the_footer(snap_compare, sample_home):
    from tests.support.console_pilot import with_operator

    with_operator(sample_home)
    app = fixed_app(sample_home)

    async def run_before(pilot):
        await _resolve_dialog(pilot)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_signing_dialog_error_gone_once_the_reason_is_typed(snap_compare, sample_home):
    """Sign with no reason: "a reason is required"; type one: the error goes, the preview comes."""
    from textual.widgets import Static

    from tests.support.console_pilot import with_operator

    with_operator(sample_home)
    app = fixed_app(sample_home)

    async def run_before(pilot):
        dialog = await _resolve_dialog(pilot)
        await pilot.press("ctrl+s")
        result = dialog.query_one("#sign-result", Static)
        await until(lambda: "a reason is required" in str(result.render()))
        await pilot.press(*"count checked by radio")
        await until(lambda: dialog.preview is not None and "Not signed" not in str(result.render()))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
