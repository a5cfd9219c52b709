"""Fixtures and helpers for the console tests: a fixed clock, a fixed zone, the sample store.

Loaded for every test as a plugin (``pytest_plugins`` in tests/conftest.py), so a test asks for
``sample_home`` or ``utc`` by name without importing it; the console itself is imported only
when a test builds an app.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from core.home import Home
from tests.support.waiting import until

HOME_LABEL = "/srv/ussd"  # shown in the header instead of the test's temporary path


@pytest.fixture
def utc(monkeypatch):
    """Times on screen in UTC, whatever the machine's zone, so pictures do not depend on it."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def sample_home(tmp_path, tmp_path_factory, utc):
    """A copy of the sample store, built once per run (tests/support/sample_template.py)."""
    from tests.support.sample_template import sample_copy
    from tests.support.shared import shared_folder

    return sample_copy(shared_folder(tmp_path_factory), tmp_path / "home")


@pytest.fixture
def console_opened_with(monkeypatch) -> dict:
    """What ``ussd-console console`` hands the app (its keyword arguments), with the app itself
    replaced by a probe that records them and returns: the command line's part, without a screen."""
    seen: dict = {}

    class Probe:
        def __init__(self, home, **kwargs):
            seen.update(kwargs)
            self.return_code = 0

        def run(self):
            pass

    monkeypatch.setattr("console.commands.ui.need_terminal", lambda: None)
    monkeypatch.setattr("console.app.ConsoleApp", Probe)
    return seen


def steady_cursors() -> None:
    """Every Input of the tests' consoles shows a steady cursor. A blinking one is a 0.5 s timer
    that starts when the field takes the focus, so a snapshot taken on a busy machine caught it off
    and the picture lacked the cursor. Set before the field mounts, the blink never starts and the
    focus shows the cursor. Idempotent; only the tests' process is concerned."""
    from textual.widgets import Input

    if getattr(Input, "_steady_in_tests", False):
        return
    made = Input.__init__

    def steady_init(self, *args, **kwargs):
        made(self, *args, **kwargs)
        self.cursor_blink = False

    Input.__init__ = steady_init
    Input._steady_in_tests = True


def fixed_app(home: Home, **kwargs):
    from console.app import ConsoleApp
    from tools.sample_store import FIXED_NOW

    kwargs.setdefault("clock", lambda: FIXED_NOW)
    kwargs.setdefault("refresh_every", 0.25)
    kwargs.setdefault("service_factory", None)
    kwargs.setdefault("evict_every", None)
    kwargs.setdefault("home_label", HOME_LABEL)
    steady_cursors()
    app = ConsoleApp(home, **kwargs)
    # No animations: a tab's underline slides, and a busy machine would catch it half way.
    app.animation_level = "none"
    return app


async def press_and_settle(pilot, *keys: str) -> None:
    """Press keys, then wait until the refresh they asked for has been drawn.

    The refresh waits on the store thread, which looks idle to Textual's own
    pause, so wait for the app's refresh loop first and then let the widgets
    process what it changed (tables measure new rows when idle).
    """
    app = pilot.app
    await pilot.pause()
    await app.settled()
    for key in keys:
        before = app.refreshes
        await pilot.press(key)
        await pilot.pause()
        if app.refresh_pending:
            await until(lambda: app.refreshes > before)
        await app.settled()
    # A tab shown for the first time mounts its panel lazily and asks for its load from there,
    # which may come after the refresh waited for above: wait until the panel shows what it was
    # asked for, with no loading indicator left over it.
    try:
        await until(_panel_shown(app), what="the shown panel's load")
    except AssertionError as exc:
        raise AssertionError(f"{exc} ({_panel_state(app)})") from None
    await app.settled()
    await pilot.pause()
    await pilot.pause()


def _panel_shown(app):
    def shown() -> bool:
        panel = app.mounted_panel()
        return panel is not None and panel.loaded_params == panel.params() and not panel.loading

    return shown


def _panel_state(app) -> str:
    """What a wait for the shown panel saw last: the failure says which part never came."""
    from textual.widgets import TabbedContent

    panel = app.mounted_panel()
    active = app.query_one(TabbedContent).active
    if panel is None:
        return f"tab {active!r}: its panel is not mounted"
    return (f"tab {active!r}: loaded {panel.loaded_params!r} for {panel.params()!r}, loading={panel.loading}, "
            f"loaded version {panel.loaded_version!r} of {app.refresher.version!r}, refreshes {app.refreshes}, "
            f"refresh pending {app.refresh_pending}, error {app.refresher.error!r}")


def run_async(test):
    """Run an async test in its own event loop (no asyncio plugin needed)."""
    import functools
    import inspect

    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    run.__signature__ = inspect.signature(test)
    return run


def notes_on_screen(app) -> list[str]:
    """The notifications drawn on the current screen (title and text), as an operator reads them
    (the test runs the app with ``run_test(notifications=True)``)."""
    from textual.widgets._toast import Toast

    return [toast.render().plain for toast in app.screen.query(Toast)]
