"""Fixtures and helpers for the console tests: a fixed clock, a fixed zone, the sample store."""

from __future__ import annotations

import asyncio
import time

import pytest

from console.app import ConsoleApp
from tools.sample_store import FIXED_NOW, build
from core.home import Home

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
def sample_home(tmp_path, utc):
    return build(Home(tmp_path / "home"))


def fixed_app(home: Home, **kwargs) -> ConsoleApp:
    kwargs.setdefault("clock", lambda: FIXED_NOW)
    kwargs.setdefault("service_factory", None)
    kwargs.setdefault("evict_every", None)
    kwargs.setdefault("home_label", HOME_LABEL)
    app = ConsoleApp(home, **kwargs)
    # No animations: a tab's underline slides, and a busy machine would catch it half way.
    app.animation_level = "none"
    return app


async def until(predicate, timeout: float = 60.0, pause: float = 0.05):
    """Poll ``predicate`` until true; fail with a clear message after ``timeout`` seconds
    (generous: it only turns a hang into a failure, never a slow machine into one)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(pause)
    raise AssertionError(f"condition not met within {timeout}s")


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
        if app._running_refresh or app._wanted:
            await until(lambda: app.refreshes > before)
        await app.settled()
    await pilot.pause()
    await pilot.pause()


def run_async(test):
    """Run an async test in its own event loop (no asyncio plugin needed)."""
    import functools
    import inspect

    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    run.__signature__ = inspect.signature(test)
    return run
