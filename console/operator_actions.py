"""What an operator does from the console beyond looking: sign, evict, export, sweep, the palette.

A mixin of ``ConsoleApp``: each action reads or writes the store on a worker
thread through its own connection (never the UI thread), tells the operator
the result in one notification, and asks for a refresh.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from rich.text import Text
from textual import work
from textual.app import SystemCommand
from textual.screen import Screen

from core import Receiver
from core.rules.retention import describe
from core.rules.text import escape_text

from . import hooks
from .dialogs.confirm_dialog import ConfirmDialog
from .messages import RefreshWanted
from .panels import PANELS
from .ui_text import count, stamp

log = logging.getLogger("ussd.console")


class OperatorActions:
    """Needs the app's ``home``, ``store``, ``view``, ``clock``, ``service``, ``dialogs`` and ``eviction``."""

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
            f"Forget the {count(w['due'])} frame ids first seen before {stamp(w['cutoff'])} "
            f"(kept {describe(policy)})?\n\nCases stay in the ledger, and a re-sent frame is still "
            "caught as a duplicate. The run is logged."
        )
        if await self.push_screen_wait(ConfirmDialog("Run eviction now", body, yes="Forget them")):
            self._evict("console")
        else:
            self.notify("Eviction cancelled; nothing was removed.", title="Retention", markup=False, timeout=4)

    @work(thread=True, group="evict", exit_on_error=False)
    def _evict(self, started_by: str) -> None:
        """Age-only eviction on its own connection, in short transactions (R7)."""
        try:
            with Receiver(self.store_target) as receiver:
                removed = receiver.evict(now=self.clock(), started_by=started_by)
        except Exception as exc:
            log.exception("eviction failed")
            self.notify(f"Eviction failed: {escape_text(exc, 160)}", severity="error", markup=False)
            return
        if started_by != "schedule" or removed:
            self.notify(f"Eviction forgot {count(removed)} old frame ids; the cases stay.", title="Retention",
                        markup=False, timeout=5)
        self._post(RefreshWanted())

    def _eviction_tick(self) -> None:
        if self.eviction is not None and self.eviction.due(self.clock()):
            self._evict("schedule")

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
        self.notify(f"Sweep done: {count(handled)} {'file' if handled == 1 else 'files'} taken.", title="Inbox",
                    markup=False, timeout=4)
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
        yield SystemCommand("Export a view", f"Any view as CSV or .xlsx under {escape_text(self.home.exports, 60)} (e)",
                            self.action_export)
        if self.dialog("mark") is not None:
            for status, key in (("dispatched", "D"), ("served", "S"), ("closed", "C"), ("open", "O")):
                yield SystemCommand(f"Ranking: mark the selected case {status} (signed)", f"Key {key} on Ranking or Cases",
                                    self._panel_action("ranking", "mark", status))
        yield SystemCommand("Lock the signing key", "Forget the unlocked key now (ctrl+l)", self.action_lock_key)
        if self.dialog("resolve") is not None:
            yield SystemCommand("Quarantine: keep first (signed)", "Keep the first version (k)",
                                self._panel_action("quarantine", "resolve", "keep_first"))
            yield SystemCommand("Quarantine: accept correction (signed)", "The ledger takes the new version (a)",
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
