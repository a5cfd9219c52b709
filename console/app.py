"""The operator console: a live Textual app over the inbox and the ledger (docs/rules.md#the-console).

Threads: the UI thread only draws and handles keys; one store thread (``StoreView``) runs every
read, so the UI never waits on SQLite; the inbox runs on threads of its own and only asks for a
refresh (what the panels show always comes from the store, whoever wrote it); exports and
evictions open their own connection on a worker thread. The app is thin: its settings, and its
collaborators wired, each in a module of its own: the ``MainScreen`` (header, tabs, footer), the
``RefreshEngine``, ``Notices``, the ``InboxLifecycle`` and the terminal watch. ``CaseActions``
and ``OperatorActions`` answer what panels and dialogs ask for.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from textual import work
from textual.app import App

from core.config import store_target as configured_store_target
from core.home import Home
from core.i18n import N_
from core.inbox.heartbeat import live as live_services
from core.rules.retention import EVICT_EVERY_SECONDS, EvictionSchedule
from core.signing.session import SigningSession
from core.store.records import Totals

from . import actions
from .case_actions import CaseActions
from .dialogs.confirm_dialog import ConfirmDialog
from .dialogs.help_screen import HelpScreen
from .inbox_lifecycle import InboxLifecycle, inbox_service
from .main_screen import MainScreen
from .messages import Arrived, RefreshRequest
from .notices import Notices
from .operator_actions import OperatorActions
from .panels import Panel
from .refresh_engine import RefreshEngine
from .store_view import StoreView
from .terminal_watch import watch_terminal
from .ui_text import inbox_takers, quit_inbox_words
from .widgets.header_bar import HeaderBar
from .widgets.palette import ActionsProvider, PlainPalette

__all__ = ["ConsoleApp", "inbox_service"]

FIRST_EVICTION_AFTER = 60.0  # seconds after start; then hourly


class ConsoleApp(CaseActions, OperatorActions, App):
    CSS_PATH = Path(__file__).with_name("console.tcss")
    TITLE = "USSD console"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    COMMANDS = {ActionsProvider}  # the palette: every action of the table, found by its words too
    BINDINGS = actions.bindings("app")

    def __init__(self, home: Home, *, clock: Callable[[], float] = time.time,
                 service_factory: Callable[[Home, Callable], Any] | None = inbox_service, refresh_every: float = 1.0,
                 evict_every: float | None = EVICT_EVERY_SECONDS, companions: Iterable[Any] = (),
                 home_label: str | None = None, store_target: str | None = None, quit_note: str | None = None,
                 unlock_minutes: float = 15.0, keys: Mapping[str, str] | None = None):
        """``service_factory=None`` opens the console without the inbox (read-only views);
        ``companions`` start after the inbox and stop before it (the demo's gateway); ``home_label``
        replaces the home's path in the header (fixed pictures); ``store_target`` is the store
        (default: ``db =`` in config.toml, else ``<home>/receiver.db``); ``quit_note`` is said before
        quitting; ``unlock_minutes``: an unlocked signing key locks after this long without a
        signature; ``keys``: ``[console.keys]``, checked against the actions table (``ValueError``)."""
        keymap = actions.check_keymap(keys or {})
        super().__init__()
        self.keymap = keymap  # the keys moved by config.toml: the help screen shows them
        self.set_keymap(keymap)
        self.home = home.ensure()
        self.clock = clock
        self.store_target = store_target or configured_store_target(self.home)
        self.view = StoreView(self.store_target)
        self.refresh_every = refresh_every
        self.evict_every = evict_every
        self.quit_note = quit_note
        self.signing = SigningSession(unlock_minutes * 60)
        self.eviction: EvictionSchedule | None = None
        self.main = MainScreen(home_label or str(home.root), clock)
        self.refresher = RefreshEngine(self)
        self.notices = Notices(self)
        self.inbox = InboxLifecycle(self, service_factory, companions)

    def get_default_screen(self) -> MainScreen:
        return self.main

    # -- what the collaborators hold, as the panels, the mixins and the tests read it -----
    @property
    def service(self) -> Any:
        return self.inbox.service

    @property
    def health(self) -> dict | None:
        return self.refresher.health

    @property
    def totals(self) -> Totals | None:
        return self.refresher.totals

    @property
    def refreshes(self) -> int:
        return self.refresher.refreshes

    @property
    def refresh_pending(self) -> bool:
        return self.refresher.pending

    @property
    def next_eviction_at(self) -> float | None:
        return self.eviction.next_at if self.eviction is not None else None

    # The main screen's, whatever dialog is over it (as the app's own queries do: Textual queries
    # the screen the app composed), so the refresh goes on under a dialog.
    def panel(self, tab_id: str | None = None) -> Panel:
        return self.main.panel(tab_id)

    def mounted_panel(self, tab_id: str | None = None) -> Panel | None:
        return self.main.mounted_panel(tab_id)

    def header_bar(self) -> HeaderBar | None:
        return self.main.header_bar()

    def request_refresh(self, force: bool = False, changed: bool = False) -> None:
        self.refresher.request(force=force, changed=changed)

    async def settled(self, timeout: float = 10.0) -> None:
        await self.refresher.settled(timeout)

    # -- lifecycle -----------------------------------------------------------------------
    def begin(self) -> None:
        """The main screen is up (its ``on_mount``): the refresh loop, the schedules and the inbox start."""
        self.set_interval(self.refresh_every, self.request_refresh)
        self.set_interval(5.0, self._signing_tick)
        if self.evict_every:
            self.eviction = EvictionSchedule(self.evict_every, self.clock(), first_after=FIRST_EVICTION_AFTER)
            self.set_interval(FIRST_EVICTION_AFTER, self._eviction_tick)
        self.request_refresh(force=True)
        self.inbox.start()
        watch_terminal(self)

    def on_arrived(self, message: Arrived) -> None:
        self.request_refresh()

    def on_refresh_request(self, message: RefreshRequest) -> None:
        self.request_refresh(force=message.force, changed=message.changed)

    async def on_unmount(self) -> None:
        self.signing.lock()  # the unlocked key never outlives the console
        await self.inbox.stop()
        await asyncio.to_thread(self.view.close)

    # -- actions -----------------------------------------------------------------------------
    def action_show_panel(self, tab_id: str) -> None:
        self.main.show_panel(tab_id)
        self.request_refresh()

    def action_refresh(self) -> None:
        self.request_refresh(force=True)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.keymap))

    def action_overview(self) -> None:
        from .dialogs.overview_screen import OverviewScreen  # its figures module is needed only here

        if not isinstance(self.screen, OverviewScreen):
            self.push_screen(OverviewScreen())

    def action_command_palette(self) -> None:
        if self.use_command_palette and not PlainPalette.is_open(self):
            self.push_screen(PlainPalette(id="--command-palette"))

    def action_dismiss_notes(self) -> None:
        self.clear_notifications()

    async def action_quit(self) -> None:
        """Textual's own ctrl+q asks first too: nothing stops the inbox without the question."""
        self.action_ask_quit()

    @work(group="quit", exclusive=True, exit_on_error=False)
    async def action_ask_quit(self) -> None:
        """Quitting stops the inbox: ask first whenever this console is the one taking files in."""
        notes = []
        if self.inbox.factory is not None:
            others = await asyncio.to_thread(lambda: inbox_takers(live_services(self.home), os.getpid()))
            notes.append(quit_inbox_words(others))  # who takes the inbox once this console is gone
        if self.quit_note:
            notes.append(self.quit_note)
        if not notes or await self.push_screen_wait(ConfirmDialog(N_("Quit the console?"), "\n\n".join(notes),
                                                                  yes=N_("Quit"))):
            self.exit()

    def action_toggle_maximize(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
        elif screen.focused is not None:
            screen.maximize(screen.focused, container=False)
