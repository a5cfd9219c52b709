"""The operator console: a live Textual app over the inbox and the ledger (SPEC §7).

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
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from rich.text import Text
from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.lazy import Lazy
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, TabbedContent, TabPane

from core import Receiver
from core.config import InboxConfig, store_target
from core.rules.text import escape_text
from core.home import Home
from core.inbox import InboxService
from core.rules.retention import EVICT_EVERY_SECONDS, describe

from . import hooks
from console.panels.activity import ActivityPanel
from console.panels.cases import CasesPanel
from console.dialogs.confirm_dialog import ConfirmDialog
from .exports import export_path, write_dispatch_csv
from console.widgets.header_bar import HeaderBar
from console.dialogs.help_screen import HelpScreen
from console.panels.panel import Panel
from console.panels.quarantine import QuarantinePanel
from console.panels.ranking import RankingPanel
from console.panels.retention import RetentionPanel
from .store_view import StoreView
from .ui_text import count, stamp

log = logging.getLogger("ussd.console")

PANELS: list[type[Panel]] = [CasesPanel, RankingPanel, QuarantinePanel, RetentionPanel, ActivityPanel]
NOTIFY_AT_MOST = 3  # conflict notifications per refresh; the rest are summed up in one
SLOW_LOAD_SECONDS = 0.4  # show the loading indicator when an operator's request takes longer
FIRST_EVICTION_AFTER = 60.0  # seconds after start; then hourly


def inbox_service(home: Home, on_verdicts: Callable, config: InboxConfig | None = None,
                  db_path: str | None = None) -> InboxService:
    """The real inbox: watchdog push plus the periodic sweep (SPEC §6), settings from config.toml."""
    return InboxService(home, db_path=db_path, config=config, on_verdicts=on_verdicts)


def probe_store(receiver: Receiver, service: Any, last_version: int | None) -> dict:
    """The refresh probe, on the store thread: totals only when the store changed."""
    version = receiver.data_version()
    out = {"version": version, "health": service.health() if service is not None else None}
    if version != last_version:
        out["totals"] = receiver.totals()
        out["newest_conflicts"] = receiver.quarantine(status="open", limit=NOTIFY_AT_MOST + 1)
    return out


class RefreshWanted(Message):
    """Posted from a worker thread: its work changed the store, refresh now."""


class Arrived(Message):
    """Posted from the inbox's thread: verdicts for one file were committed."""

    def __init__(self, verdicts: list, result: Any) -> None:
        super().__init__()
        self.verdicts = verdicts
        self.result = result


class ConsoleApp(App):
    CSS_PATH = Path(__file__).with_name("console.tcss")
    TITLE = "USSD console"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]

    BINDINGS = [
        *(Binding(str(n), f"show_panel('{p.TAB_ID}')", f"Show {p.TITLE}", show=False)
          for n, p in enumerate(PANELS, start=1)),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("m", "toggle_maximize", "Maximize", show=False),
        Binding("ctrl+r", "refresh", "Refresh now", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        home: Home,
        *,
        clock: Callable[[], float] = time.time,
        service_factory: Callable[[Home, Callable], Any] | None = inbox_service,
        dialogs: dict[str, type[Screen]] | None = None,
        refresh_every: float = 1.0,
        evict_every: float | None = EVICT_EVERY_SECONDS,
        companions: Iterable[Any] = (),
        home_label: str | None = None,
        db: str | None = None,
    ):
        """``service_factory=None`` opens the console without the inbox (read-only views);
        ``companions`` are started after the inbox and stopped before it (the demo's gateway);
        ``home_label`` replaces the home's path in the header (fixed pictures);
        ``db`` is the store (default: ``db =`` in config.toml, else ``<home>/receiver.db``)."""
        super().__init__()
        self.home = home.ensure()
        self.home_label = home_label or str(home.root)
        self.clock = clock
        self.store = db or store_target(self.home)
        self.view = StoreView(self.store)
        self.service_factory = service_factory
        self.service: Any = None
        self.dialogs = dict(dialogs or {})
        self.refresh_every = refresh_every
        self.evict_every = evict_every
        self.companions = list(companions)
        self.health: dict | None = None
        self.totals: dict | None = None
        self.next_eviction_at: float | None = None
        self.version: int | None = None
        self.error: str | None = None
        self.refreshes = 0  # completed refresh passes; tests wait on it
        self._wanted = False
        self._force = False
        self._running_refresh = False
        self._conflict_mark: int | None = None
        self._come_back_timer = None
        self._idle = asyncio.Event()
        self._inbox_settled = threading.Event()  # the inbox start finished, one way or the other

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
        if self.evict_every:
            self.next_eviction_at = self.clock() + FIRST_EVICTION_AFTER
            self.set_interval(FIRST_EVICTION_AFTER, self._eviction_tick)
        self.request_refresh(force=True)
        if self.service_factory is not None:
            self._start_inbox()

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
        self._post(RefreshWanted())

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

    def on_refresh_wanted(self, message: RefreshWanted) -> None:
        self.request_refresh(force=True)

    async def on_unmount(self) -> None:
        if self.service_factory is not None:
            await asyncio.to_thread(self._inbox_settled.wait, 30.0)
        for companion in self.companions:
            await asyncio.to_thread(companion.stop)
        if self.service is not None:
            await asyncio.to_thread(self.service.stop, 5.0)
        await asyncio.to_thread(self.view.close)

    # -- the refresh loop ------------------------------------------------------------------
    def request_refresh(self, force: bool = False) -> None:
        """Ask for a refresh; requests that come while one runs fold into one more pass."""
        self._wanted = True
        self._force = self._force or force
        if not self._running_refresh:
            self._running_refresh = True
            self._idle.clear()
            self.run_worker(self._refresh_loop(), group="refresh", exit_on_error=False)

    async def _refresh_loop(self) -> None:
        try:
            while self._wanted:
                force, self._force, self._wanted = self._force, False, False
                await self._refresh_once(force)
                self.refreshes += 1
        finally:
            self._running_refresh = False
            self._idle.set()

    async def _refresh_once(self, force: bool) -> None:
        now = self.clock()
        header = self.query_one(HeaderBar)
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
        slow = self.set_timer(SLOW_LOAD_SECONDS, lambda: setattr(panel, "loading", asked))
        started = time.monotonic()
        try:
            data = await self.view.run(panel.load, plan, now)
        except Exception as exc:
            self.error = f"{exc.__class__.__name__}: {exc}"
            header.show(None, self.health, self.service is not None, self.error)
            log.warning("loading %s failed: %s", panel.TAB_ID, self.error)
            return
        finally:
            slow.stop()
            panel.loading = False
        panel.loaded(plan, self.version, now, started, data)

    def _fault_alert(self, before: dict | None, now: dict | None) -> None:
        """Tell the operator when an inbox fault starts and when it clears (the header keeps the mark)."""
        was = (before or {}).get("last_error")
        fault = (now or {}).get("last_error")
        if fault and fault != was:
            self.notify(f"Inbox fault: {escape_text(fault, 200)}. Files wait in the inbox; "
                        "it resumes by itself when the fault clears.",
                        title="Inbox", severity="error", timeout=30, markup=False)
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
            if self.refreshes and not self._running_refresh and not self._wanted:
                return
            try:
                await asyncio.wait_for(self._idle.wait(), max(0.01, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                break
            await asyncio.sleep(0.01)
        if not self.refreshes or self._running_refresh or self._wanted:
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
                f"{escape_text(q['first_text'], 40)}. Held for review; press 3.",
                title="! Conflict quarantined", severity="warning", timeout=12, markup=False,
            )
        if len(fresh) > NOTIFY_AT_MOST:
            self.notify(f"and {len(fresh) - NOTIFY_AT_MOST} more new conflicts; press 3.",
                        title="! Conflicts", severity="warning", timeout=12, markup=False)

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
        if isinstance(self.screen, HelpScreen):
            return
        sections = [("Everywhere", list(self.BINDINGS) + [
            Binding("ctrl+p", "", "Command palette: every action by name"),
            Binding("tab", "", "Next widget (shift+tab: previous)"),
            Binding("up,down", "", "Move in a table; pageup/pagedown scroll it"),
        ])]
        sections += [(f"{n} {p.TITLE}", list(p.BINDINGS)) for n, p in enumerate(PANELS, start=1)]
        self.push_screen(HelpScreen(sections))

    def action_toggle_maximize(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
        elif screen.focused is not None:
            screen.maximize(screen.focused, container=False)

    def dialog(self, name: str) -> type[Screen] | None:
        if name not in self.dialogs:
            self.dialogs[name] = hooks.find_dialog(name)
        return self.dialogs[name]

    def open_dialog(self, name: str, **kwargs) -> None:
        cls = self.dialog(name)
        if cls is None:
            self.notify("This action needs the signing module, which is not installed.",
                        severity="warning", markup=False)
            return

        def done(changed: Any) -> None:
            if changed:
                self.request_refresh(force=True)

        self.push_screen(cls(home=self.home, **kwargs), done)

    @work(group="dialog", exclusive=True, exit_on_error=False)
    async def action_sign_exception(self) -> None:
        if self.dialog("exception") is None:
            self.open_dialog("exception")
            return
        self.open_dialog("exception", policy=await self.view.run(lambda r: r.retention()))

    @work(group="evict", exclusive=True, exit_on_error=False)
    async def action_evict_now(self) -> None:
        try:
            witnesses = await self.view.run(lambda r: (r.witnesses(self.clock()), r.retention_seconds()))
        except Exception as exc:
            self.notify(f"Cannot read the store: {escape_text(exc, 160)}", severity="error", markup=False)
            return
        w, policy = witnesses
        body = Text(
            f"Remove the {count(w['due'])} dedup witnesses first seen before {stamp(w['cutoff'])} "
            f"(policy {describe(policy)})?\n\nCases stay in the ledger, and a re-sent frame is still "
            "caught as a duplicate. The run is logged."
        )
        if await self.push_screen_wait(ConfirmDialog("Run eviction now", body, yes="Evict")):
            self._evict("console")

    @work(thread=True, group="evict", exit_on_error=False)
    def _evict(self, started_by: str) -> None:
        """Age-only eviction on its own connection, in short transactions (R7)."""
        try:
            with Receiver(self.store) as receiver:
                removed = receiver.evict(now=self.clock(), started_by=started_by)
        except Exception as exc:
            log.exception("eviction failed")
            self.notify(f"Eviction failed: {escape_text(exc, 160)}", severity="error", markup=False)
            return
        if started_by != "schedule" or removed:
            self.notify(f"Eviction removed {count(removed)} dedup witnesses.", title="Retention", markup=False)
        self._post(RefreshWanted())

    def _eviction_tick(self) -> None:
        if self.next_eviction_at is not None and self.clock() >= self.next_eviction_at:
            self.next_eviction_at = self.clock() + self.evict_every
            self._evict("schedule")

    def action_export_ranking(self) -> None:
        self._export(export_path(self.home.exports, self.clock()))

    @work(thread=True, group="export", exclusive=True, exit_on_error=False)
    def _export(self, target: Path) -> None:
        try:
            with Receiver(self.store) as receiver:
                rows = write_dispatch_csv(receiver, target)
        except Exception as exc:
            log.exception("export failed")
            self.notify(f"Export failed: {escape_text(exc, 160)}", severity="error", markup=False)
            return
        self.notify(f"{count(rows)} cases in dispatch order written to {escape_text(target, 160)}",
                    title="Export", markup=False, timeout=10)

    def action_sweep_now(self) -> None:
        if self.service is None:
            self.notify("The inbox is not running in this console.", severity="warning", markup=False)
            return
        self._sweep()

    @work(thread=True, group="sweep", exclusive=True, exit_on_error=False)
    def _sweep(self) -> None:
        try:
            handled = self.service.sweep_now()
        except Exception as exc:
            log.exception("sweep failed")
            self.notify(f"Sweep failed: {escape_text(exc, 160)}", severity="error", markup=False)
            return
        self.notify(f"Sweep done: {count(handled)} file(s) taken.", title="Inbox", markup=False)
        self._post(RefreshWanted())

    def _panel_action(self, tab_id: str, action: str, *args) -> Callable[[], None]:
        def run() -> None:
            self.action_show_panel(tab_id)
            panel = self.mounted_panel(tab_id)
            if panel is not None:
                getattr(panel, f"action_{action}")(*args)
        return run

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette offers every action, by the words an operator would type."""
        for n, p in enumerate(PANELS, start=1):
            yield SystemCommand(f"Show {p.TITLE}", f"Switch to the {p.TITLE} screen (key {n})",
                                lambda tab=p.TAB_ID: self.action_show_panel(tab))
        yield SystemCommand("Help: keys", "Every key of every screen (?)", self.action_help)
        yield SystemCommand("Cases: filter", "Filter cases by site, need or id (/)",
                            self._panel_action("cases", "filter"))
        yield SystemCommand("Cases: clear filter", "Show every case again (Esc)",
                            self._panel_action("cases", "clear_filter"))
        yield SystemCommand("Cases: sort by next column", "Cycle the sort column (s)",
                            self._panel_action("cases", "next_sort"))
        yield SystemCommand("Cases: reverse sort", "Flip ascending and descending (r)",
                            self._panel_action("cases", "reverse"))
        yield SystemCommand("Next page", "The next window of rows of this screen (])",
                            lambda: self._page(1))
        yield SystemCommand("Previous page", "The previous window of rows of this screen ([)",
                            lambda: self._page(-1))
        yield SystemCommand("Ranking: export dispatch list to CSV",
                            f"Write the dispatch order under {escape_text(self.home.exports, 60)} (e)",
                            self.action_export_ranking)
        if self.dialog("resolve") is not None:
            yield SystemCommand("Quarantine: keep first (signed)", "Keep the first version (k)",
                                self._panel_action("quarantine", "resolve", "keep_first"))
            yield SystemCommand("Quarantine: accept correction (signed)", "The ledger takes the newcomer (a)",
                                self._panel_action("quarantine", "resolve", "accept_correction"))
        yield SystemCommand("Retention: run eviction now", "Age-only, logged, after a confirmation (e)",
                            lambda: (self.action_show_panel("retention"), self.action_evict_now()))
        if self.dialog("exception") is not None:
            yield SystemCommand("Retention: sign an exception", "Keep less than 30 days, signed (x)",
                                lambda: (self.action_show_panel("retention"), self.action_sign_exception()))
        yield SystemCommand("Inbox: sweep now", "Look in the inbox for files now (w)", self.action_sweep_now)
        yield SystemCommand("Refresh now", "Query the store again (ctrl+r)", self.action_refresh)
        yield SystemCommand("Maximize or restore the table", "Give the focused table the whole screen (m)",
                            self.action_toggle_maximize)
        yield from super().get_system_commands(screen)

    def _page(self, step: int) -> None:
        panel = self.mounted_panel()
        if panel is not None:
            panel.action_page(step)
