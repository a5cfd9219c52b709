"""The console's refresh loop: what the store holds now, onto the header and the panel on display.

Every second (and whenever something asks) a cheap ``PRAGMA data_version`` probe on the store
thread says whether anything was committed; only then are the totals read again, and the shown
panel loads when its ``plan`` says it is due. Requests that come while a pass runs fold into one
more pass, so a burst of them costs one refresh. The engine keeps what the last probe said
(``version``, ``health``, ``totals``, ``error``); the app shows them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from core import Receiver
from core.inbox import inbox_files
from core.store.records import Totals

from . import actions
from .notices import NOTIFY_AT_MOST

log = logging.getLogger("ussd.console")

SLOW_LOAD_SECONDS = 0.4  # show the loading indicator when an operator's request takes longer


def probe_store(receiver: Receiver, service: Any, last_version: int | None) -> dict:
    """The refresh probe, on the store thread: totals only when the store changed."""
    version = receiver.data_version()
    out = {"version": version, "health": service.health() if service is not None else None}
    if version != last_version:
        out["totals"] = receiver.totals()
        out["newest_conflicts"] = receiver.quarantine(status="open", limit=NOTIFY_AT_MOST + 1)
        out["newest_rejected_files"] = inbox_files(receiver, state="rejected", limit=NOTIFY_AT_MOST + 1)
    return out


class RefreshEngine:
    """Runs the refresh passes of one ``ConsoleApp``: its timers, workers and store thread."""

    def __init__(self, app):
        self.app = app
        self.health: dict | None = None
        self.totals: Totals | None = None
        self.version: int | None = None
        self.error: str | None = None
        self.refreshes = 0  # completed passes; tests and screenshots wait on it (and ``pending``)
        self._wanted = False
        self._force = False
        self._running = False
        self._come_back_timer = None
        self._load_in_flight: object | None = None  # the panel load the loop awaits, if any
        self._idle = asyncio.Event()

    @property
    def pending(self) -> bool:
        """A refresh runs or is wanted: what a test waits on before it reads the screen."""
        return self._running or self._wanted

    def request(self, force: bool = False, changed: bool = False) -> None:
        """Ask for a refresh; requests that come while one runs fold into one more pass.

        ``changed``: this console wrote the store. SQLite's ``data_version`` does not move for the
        connection that wrote, so every panel is marked stale and reloads when next shown."""
        if changed:
            self.version = None
            for tab_id, _title in actions.TABS:
                panel = self.app.mounted_panel(tab_id)
                if panel is not None:
                    panel.loaded_version = None
        self._wanted = True
        self._force = self._force or force
        if not self._running:
            self._running = True
            self._idle.clear()
            # The function, not a coroutine: a worker the exiting app never starts leaves no coroutine unawaited.
            self.app.run_worker(self._loop, group="refresh", exit_on_error=False)

    async def _loop(self) -> None:
        try:
            while self._wanted:
                force, self._force, self._wanted = self._force, False, False
                await self.once(force)
                self.refreshes += 1
        finally:
            self._running = False
            self._idle.set()

    def _failed(self, header, exc: Exception, what: str) -> None:
        """A store that vanished or broke: say so in the header, keep the console up."""
        self.error = f"{exc.__class__.__name__}: {exc}"
        header.show(None, self.health, self.app.service is not None, self.error)
        log.warning("%s failed: %s", what, self.error)

    async def once(self, force: bool) -> None:
        """One pass: probe, tell what is new, and load the shown panel if it is due."""
        app = self.app
        now = app.clock()
        header = app.header_bar()
        if header is None:
            return
        try:
            probe = await app.view.run(probe_store, app.service, None if force else self.version)
        except Exception as exc:
            self._failed(header, exc, "refresh")
            return
        self.error = None
        app.notices.fault(self.health, probe["health"])
        self.health = probe["health"]
        if "totals" in probe:
            self.totals = probe["totals"]
            app.notices.conflicts(probe["newest_conflicts"], self.totals.conflicts_open)
            app.notices.rejected_files(probe["newest_rejected_files"])
        header.show(self.totals, self.health, app.service is not None)
        self.version = probe["version"]
        panel = app.mounted_panel()
        if panel is None:
            self._wanted = True  # try again once it is mounted
            await asyncio.sleep(0.05)
            return
        plan = panel.plan(self.version, force, now)
        if plan is None:
            self._come_back(panel.wait_left(self.version))
            return
        await self._load(panel, plan, now, header)

    async def _load(self, panel, plan, now: float, header) -> None:
        asked = panel.params() != panel.loaded_params
        load = self._load_in_flight = object()

        def still_loading() -> None:
            # A timer's callback is queued on the app when it fires, so it may run after the load
            # ended and ``stop`` came too late: it would then cover a loaded panel for good.
            if self._load_in_flight is load:
                panel.loading = asked

        slow = self.app.set_timer(SLOW_LOAD_SECONDS, still_loading)
        started = time.monotonic()
        try:
            data = await self.app.view.run(panel.load, plan, now)
        except Exception as exc:
            self._failed(header, exc, f"loading {panel.TAB_ID}")
            return
        finally:
            self._load_in_flight = None
            slow.stop()
            panel.loading = False
        panel.loaded(plan, self.version, now, started, data)

    def _come_back(self, delay: float | None) -> None:
        """A load the store asked for was held back: refresh again when it may run."""
        if delay is None or self._come_back_timer is not None:
            return

        def due() -> None:
            self._come_back_timer = None
            self.request()

        self._come_back_timer = self.app.set_timer(max(delay, 0.05), due)

    async def settled(self, timeout: float = 10.0) -> None:
        """Wait until no refresh is running or wanted (tests and screenshots)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.refreshes and not self.pending:
                return
            try:
                await asyncio.wait_for(self._idle.wait(), max(0.01, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                break
            await asyncio.sleep(0.01)
        if not self.refreshes or self.pending:
            raise TimeoutError("the console did not settle")
