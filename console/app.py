"""The operator console: a live Textual app over the inbox and the ledger (docs/rules.md#the-console).

Threads, and why:
- the UI thread only draws and handles keys;
- one store thread (``StoreView``) runs every read query, so the UI never
  waits on SQLite and the console holds one reading connection;
- the inbox service runs its observer and sweep on threads of its own and
  reports verdicts by posting a message, which only asks for a refresh: what
  the panels show always comes from the store, so any process that writes the
  store (a CLI ingest, a headless watcher) shows up too;
- exports and evictions open their own connection on a worker thread, so a
  long one never stalls the panels.
A refresh loop runs every second: a cheap ``PRAGMA data_version`` probe says
whether anything was committed, and only then are the totals and the visible
panel queried again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from rich.text import Text
from textual import on, work
from textual.app import App
from textual.css.query import NoMatches
from textual.lazy import Lazy
from textual.message import Message
from textual.widgets import Footer, TabbedContent, TabPane

from core import Receiver
from core.config import InboxConfig
from core.config import store_target as configured_store_target
from core.home import Home
from core.inbox import InboxService, inbox_files
from core.inbox.faults import FILES_RETRIED
from core.inbox.heartbeat import live as live_services
from core.rules.retention import EVICT_EVERY_SECONDS, EvictionSchedule
from core.rules.text import escape_text
from core.signing.session import SigningSession

from . import actions
from .case_actions import CaseActions
from .dialogs.confirm_dialog import ConfirmDialog
from .dialogs.help_screen import HelpScreen
from .messages import Arrived, RefreshRequest
from .operator_actions import OperatorActions
from .panels import PANELS, Panel, QuarantinePanel
from .store_view import StoreView
from .ui_text import count, inbox_takers, quit_inbox_words
from .widgets.header_bar import HeaderBar
from .widgets.palette import ActionsProvider, PlainPalette

log = logging.getLogger("ussd.console")

NOTIFY_AT_MOST = 3  # conflict notifications per refresh; the rest are summed up in one
TERMINAL_CHECK_SECONDS = 2.0  # how soon a console whose terminal went away (a dropped SSH session) closes
SLOW_LOAD_SECONDS = 0.4  # show the loading indicator when an operator's request takes longer
FIRST_EVICTION_AFTER = 60.0  # seconds after start; then hourly


def inbox_service(home: Home, on_verdicts: Callable, config: InboxConfig | None = None,
                  store_target: str | None = None, alerts=None) -> InboxService:
    """The real inbox: watchdog push plus the periodic sweep (docs/rules.md#delivery-one-merge-point-two-paths),
    and alert delivery; settings from config.toml."""
    return InboxService(home, store_target=store_target, config=config, on_verdicts=on_verdicts, role="console",
                        alerts=alerts)


def probe_store(receiver: Receiver, service: Any, last_version: int | None) -> dict:
    """The refresh probe, on the store thread: totals only when the store changed."""
    version = receiver.data_version()
    out = {"version": version, "health": service.health() if service is not None else None}
    if version != last_version:
        out["totals"] = receiver.totals()
        out["newest_conflicts"] = receiver.quarantine(status="open", limit=NOTIFY_AT_MOST + 1)
        out["newest_rejected_files"] = inbox_files(receiver, state="rejected", limit=NOTIFY_AT_MOST + 1)
    return out


class ConsoleApp(CaseActions, OperatorActions, App):
    CSS_PATH = Path(__file__).with_name("console.tcss")
    TITLE = "USSD console"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    COMMANDS = {ActionsProvider}  # the palette: every action of the table, found by its words too
    BINDINGS = actions.bindings("app")

    def __init__(
        self,
        home: Home,
        *,
        clock: Callable[[], float] = time.time,
        service_factory: Callable[[Home, Callable], Any] | None = inbox_service,
        refresh_every: float = 1.0,
        evict_every: float | None = EVICT_EVERY_SECONDS,
        companions: Iterable[Any] = (),
        home_label: str | None = None,
        store_target: str | None = None,
        quit_note: str | None = None,
        unlock_minutes: float = 15.0,
        keys: Mapping[str, str] | None = None,
    ):
        """``service_factory=None`` opens the console without the inbox (read-only views);
        ``companions`` are started after the inbox and stopped before it (the demo's gateway);
        ``home_label`` replaces the home's path in the header (fixed pictures);
        ``store_target`` is the store (default: ``db =`` in config.toml, else ``<home>/receiver.db``);
        ``quit_note`` is said before quitting (the demo: what happens to its home).

        ``unlock_minutes``: an unlocked signing key locks after this long without a signature;
        ``keys``: ``[console.keys]``, action id -> key(s), checked against the actions table
        (``ValueError`` naming the id or the clash)."""
        keymap = actions.check_keymap(keys or {})
        super().__init__()
        self.keymap = keymap  # the keys moved by config.toml: the help screen shows them
        self.set_keymap(keymap)
        self.home = home.ensure()
        self.home_label = home_label or str(home.root)
        self.clock = clock
        self.store_target = store_target or configured_store_target(self.home)
        self.view = StoreView(self.store_target)
        self.service_factory = service_factory
        self.service: Any = None
        self.refresh_every = refresh_every
        self.evict_every = evict_every
        self.companions = list(companions)
        self.quit_note = quit_note
        self.signing = SigningSession(unlock_minutes * 60)
        self.health: dict | None = None
        self.totals: dict | None = None
        self.eviction: EvictionSchedule | None = None
        self.version: int | None = None
        self.error: str | None = None
        self.refreshes = 0  # completed refresh passes; tests and screenshots wait on it (and refresh_pending)
        self._wanted = False
        self._force = False
        self._running_refresh = False
        self._conflict_mark: int | None = None
        self._rejected_mark: float | None = None
        self._come_back_timer = None
        self._load_in_flight: object | None = None  # the panel load the refresh loop awaits, if any
        self._idle = asyncio.Event()
        self._inbox_settled = threading.Event()  # the inbox start finished, one way or the other

    @property
    def next_eviction_at(self) -> float | None:
        return self.eviction.next_at if self.eviction is not None else None

    # -- layout ------------------------------------------------------------------------
    def compose(self):
        yield HeaderBar(self.home_label, clock=self.clock, id="header")
        with TabbedContent(id="tabs", initial=PANELS[0].TAB_ID):
            for n, panel in enumerate(PANELS, start=1):
                with TabPane(f"{n} {panel.TITLE}", id=panel.TAB_ID):
                    yield panel() if n == 1 else Lazy(panel())
        yield Footer()

    def panel(self, tab_id: str | None = None) -> Panel:
        tab_id = tab_id or self.query_one(TabbedContent).active
        return self.query_one(f"#panel-{tab_id}", Panel)

    def mounted_panel(self, tab_id: str | None = None) -> Panel | None:
        """The panel, or None in the moment before a lazily mounted one arrives."""
        try:
            return self.panel(tab_id)
        except NoMatches:
            return None

    # -- lifecycle -----------------------------------------------------------------------
    async def on_mount(self) -> None:
        self.panel().focus_main()
        self.set_interval(self.refresh_every, self.request_refresh)
        self.set_interval(5.0, self._signing_tick)
        if self.evict_every:
            self.eviction = EvictionSchedule(self.evict_every, self.clock(), first_after=FIRST_EVICTION_AFTER)
            self.set_interval(FIRST_EVICTION_AFTER, self._eviction_tick)
        self.request_refresh(force=True)
        if self.service_factory is not None:
            self._start_inbox()
        terminal = None if self.is_headless else _terminal_fd()
        if terminal is not None:
            self.set_interval(TERMINAL_CHECK_SECONDS, lambda: self._terminal_check(terminal))

    def _terminal_check(self, fd: int) -> None:
        """Close when the terminal has hung up. A parent that keeps the hang-up signal to itself
        (``make demo``, ``make run``) leaves the console reading an ended terminal, which Textual
        then polls without end: a dropped SSH session would leave it spinning a core and running
        the inbox with nobody watching."""
        if not os.isatty(fd):
            log.warning("the terminal went away; closing the console")
            self.exit(return_code=129)

    @work(thread=True, group="inbox", exit_on_error=False)
    def _start_inbox(self) -> None:
        """Start the inbox on its own threads; the first sweep may take a while on a full inbox."""
        try:
            service = self.service_factory(self.home, self._verdicts_from_inbox)
            service.start()
            self.service = service
            for companion in self.companions:
                companion.start()
        except Exception as exc:
            log.exception("inbox did not start")
            self.notify(f"The inbox did not start: {escape_text(exc, 160)}",
                        title="Inbox", severity="error", markup=False, timeout=20)
            return
        finally:
            self._inbox_settled.set()
        self._post(RefreshRequest(force=True))

    def _post(self, message: Message) -> None:
        """Thread-safe and never blocking, unlike ``call_from_thread``, which could wait
        forever on a console that is shutting down while the inbox stops."""
        try:
            self.post_message(message)
        except RuntimeError:  # the event loop has already closed: the console is exiting
            pass

    def _verdicts_from_inbox(self, verdicts: list, result: Any) -> None:
        """Called on the inbox's threads: hand over to the UI thread and return at once."""
        self._post(Arrived(verdicts, result))

    def on_arrived(self, message: Arrived) -> None:
        self.request_refresh()

    def on_refresh_request(self, message: RefreshRequest) -> None:
        self.request_refresh(force=message.force, changed=message.changed)

    async def on_unmount(self) -> None:
        self.signing.lock()  # the unlocked key never outlives the console
        if self.service_factory is not None:
            await asyncio.to_thread(self._inbox_settled.wait, 30.0)
        for companion in self.companions:
            await asyncio.to_thread(companion.stop)
        if self.service is not None:
            await asyncio.to_thread(self.service.stop, 5.0)
        await asyncio.to_thread(self.view.close)

    # -- the refresh loop ------------------------------------------------------------------
    @property
    def refresh_pending(self) -> bool:
        """A refresh runs or is wanted: what a test waits on before it reads the screen."""
        return self._running_refresh or self._wanted

    def request_refresh(self, force: bool = False, changed: bool = False) -> None:
        """Ask for a refresh; requests that come while one runs fold into one more pass.

        ``changed``: this console wrote the store. SQLite's ``data_version`` does not move for the
        connection that wrote, so every panel is marked stale and reloads when next shown."""
        if changed:
            self.version = None
            for tab_id, _title in actions.TABS:
                panel = self.mounted_panel(tab_id)
                if panel is not None:
                    panel.loaded_version = None
        self._wanted = True
        self._force = self._force or force
        if not self._running_refresh:
            self._running_refresh = True
            self._idle.clear()
            # The function, not a coroutine: a worker the exiting app never starts leaves no coroutine unawaited.
            self.run_worker(self._refresh_loop, group="refresh", exit_on_error=False)

    async def _refresh_loop(self) -> None:
        try:
            while self._wanted:
                force, self._force, self._wanted = self._force, False, False
                await self._refresh_once(force)
                self.refreshes += 1
        finally:
            self._running_refresh = False
            self._idle.set()

    def header_bar(self) -> HeaderBar | None:
        """The header, or None while the app is taken down: a timer can still fire after its widgets went."""
        return next(iter(self.query(HeaderBar)), None)

    async def _refresh_once(self, force: bool) -> None:
        now = self.clock()
        header = self.header_bar()
        if header is None:
            return
        try:
            probe = await self.view.run(probe_store, self.service, None if force else self.version)
        except Exception as exc:  # a store that vanished or broke: say so, keep the console up
            self.error = f"{exc.__class__.__name__}: {exc}"
            header.show(None, self.health, self.service is not None, self.error)
            log.warning("refresh failed: %s", self.error)
            return
        self.error = None
        self._fault_alert(self.health, probe["health"])
        self.health = probe["health"]
        if "totals" in probe:
            self.totals = probe["totals"]
            self._conflicts(probe["newest_conflicts"], self.totals["conflicts_open"])
            self._rejected_files(probe["newest_rejected_files"])
        header.show(self.totals, self.health, self.service is not None)
        self.version = probe["version"]
        panel = self.mounted_panel()
        if panel is None:
            self._wanted = True  # try again once it is mounted
            await asyncio.sleep(0.05)
            return
        plan = panel.plan(self.version, force, now)
        if plan is None:
            self._come_back(panel.wait_left(self.version))
            return
        asked = panel.params() != panel.loaded_params
        load = self._load_in_flight = object()

        def still_loading() -> None:
            # A timer's callback is queued on the app when it fires, so it may run after the load
            # ended and ``stop`` came too late: it would then cover a loaded panel for good.
            if self._load_in_flight is load:
                panel.loading = asked

        slow = self.set_timer(SLOW_LOAD_SECONDS, still_loading)
        started = time.monotonic()
        try:
            data = await self.view.run(panel.load, plan, now)
        except Exception as exc:
            self.error = f"{exc.__class__.__name__}: {exc}"
            header.show(None, self.health, self.service is not None, self.error)
            log.warning("loading %s failed: %s", panel.TAB_ID, self.error)
            return
        finally:
            self._load_in_flight = None
            slow.stop()
            panel.loading = False
        panel.loaded(plan, self.version, now, started, data)

    def _fault_alert(self, before: dict | None, now: dict | None) -> None:
        """Tell the operator when an inbox fault starts and when it clears (the header keeps the mark)."""
        was = (before or {}).get("last_error")
        fault = (now or {}).get("last_error")
        if fault and fault != was:
            cause = fault.removesuffix(f"; {FILES_RETRIED}")  # a store or disk fault says it too: say it once
            self.notify(f"Inbox fault: {escape_text(cause, 200)}. Files wait in the inbox; "
                        "it resumes by itself when the fault clears.",
                        title="Inbox", severity="error", timeout=15, markup=False)
            self.bell()
        elif was and not fault:
            self.notify("Inbox fault cleared; delivery resumed.", title="Inbox", markup=False)

    def _come_back(self, delay: float | None) -> None:
        """A load the store asked for was held back: refresh again when it may run."""
        if delay is None or self._come_back_timer is not None:
            return

        def due() -> None:
            self._come_back_timer = None
            self.request_refresh()

        self._come_back_timer = self.set_timer(max(delay, 0.05), due)

    async def settled(self, timeout: float = 10.0) -> None:
        """Wait until no refresh is running or wanted (tests and screenshots)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.refreshes and not self.refresh_pending:
                return
            try:
                await asyncio.wait_for(self._idle.wait(), max(0.01, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                break
            await asyncio.sleep(0.01)
        if not self.refreshes or self.refresh_pending:
            raise TimeoutError("the console did not settle")

    def _conflicts(self, newest: list[dict], open_count: int) -> None:
        """A new conflict raises a notification and a bell wherever the operator is."""
        tab = self.query_one(TabbedContent).get_tab(QuarantinePanel.TAB_ID)
        label = Text(f"3 {QuarantinePanel.TITLE}")
        if open_count:
            label.append(f" !{count(open_count)}", style="bold")
        tab.label = label
        top = max((q["id"] for q in newest), default=0)
        if self._conflict_mark is None:
            self._conflict_mark = top
            return
        fresh = [q for q in newest if q["id"] > self._conflict_mark]
        self._conflict_mark = max(self._conflict_mark, top)
        if not fresh:
            return
        self.bell()
        for q in fresh[:NOTIFY_AT_MOST]:
            self.notify(
                f"{escape_text(q['frame_id'], 64)}: {escape_text(q['frame_text'], 40)} differs from "
                f"{escape_text(q['ledger_text'] or q['first_text'], 40)}. Held for review; press 3 (d hides notes).",
                title="! Conflict held", severity="warning", timeout=8, markup=False,
            )
        if len(fresh) > NOTIFY_AT_MOST:
            self.notify(f"and {len(fresh) - NOTIFY_AT_MOST} more new conflicts; press 3.",
                        title="! Conflicts", severity="warning", timeout=8, markup=False)

    def _rejected_files(self, newest: list[dict]) -> None:
        """A file rejected whole (by this console's inbox or another receiver on the store) raises a
        notification and a bell: it is never only a log line."""
        top = max((f["finished_at"] or 0 for f in newest), default=0)
        if self._rejected_mark is None:
            self._rejected_mark = top
            return
        fresh = [f for f in newest if (f["finished_at"] or 0) > self._rejected_mark]
        self._rejected_mark = max(self._rejected_mark, top)
        if not fresh:
            return
        self.bell()
        for f in fresh[:NOTIFY_AT_MOST]:
            self.notify(f"{escape_text(f['name'], 64)}: {escape_text(f['reason'], 160)}. Kept in rejected/; press 5.",
                        title="! File rejected", severity="warning", timeout=15, markup=False)
        if len(fresh) > NOTIFY_AT_MOST:
            self.notify(f"and {len(fresh) - NOTIFY_AT_MOST} more rejected files; press 5.",
                        title="! Files rejected", severity="warning", timeout=15, markup=False)

    # -- actions -----------------------------------------------------------------------------
    def action_show_panel(self, tab_id: str) -> None:
        self.query_one(TabbedContent).active = tab_id
        self._focus_panel(tab_id)
        self.request_refresh()

    def _focus_panel(self, tab_id: str) -> None:
        panel = self.mounted_panel(tab_id)
        if panel is not None:
            panel.focus_main()
        else:
            self.set_timer(0.05, lambda: self._focus_panel(tab_id))

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
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
        if self.service_factory is not None:
            others = await asyncio.to_thread(lambda: inbox_takers(live_services(self.home), os.getpid()))
            notes.append(quit_inbox_words(others))  # who takes the inbox once this console is gone
        if self.quit_note:
            notes.append(self.quit_note)
        if not notes or await self.push_screen_wait(ConfirmDialog("Quit the console?", "\n\n".join(notes),
                                                                  yes="Quit")):
            self.exit()

    def action_toggle_maximize(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
        elif screen.focused is not None:
            screen.maximize(screen.focused, container=False)


def _terminal_fd() -> int | None:
    """The terminal the console reads its keys from, or None (a pipe, ``serve``, a test)."""
    try:
        fd = sys.__stdin__.fileno()
    except (AttributeError, ValueError, OSError):
        return None
    return fd if os.isatty(fd) else None
