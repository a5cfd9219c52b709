"""What an operator does from the console beyond looking: sign, evict, sweep, the palette.

A mixin of ``ConsoleApp``: each action reads or writes the store on a worker
thread through its own connection (never the UI thread), tells the operator
the result in one notification, and ends with a refresh of what it changed.
The panels ask by message (``console.messages``); the app answers here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Iterable

from rich.text import Text
from textual import work
from textual.app import SystemCommand
from textual.screen import Screen

from core import Receiver
from core.i18n import N_, _, ngettext
from core.rules.retention import describe
from core.rules.text import said

from . import actions
from .dialogs.case_screen import CaseScreen
from .dialogs.confirm_dialog import ConfirmDialog
from .dialogs.exception_dialog import ExceptionDialog
from .dialogs.resolve_dialog import ResolveDialog
from .messages import RefreshRequest, ResolveRequest
from .ui_text import count, stamp

log = logging.getLogger("ussd.console")


class OperatorActions:
    """Needs the app's ``home``, ``store``, ``view``, ``clock``, ``service``, ``inbox`` and ``eviction``."""

    def open_dialog(self, cls: type[Screen], **kwargs) -> None:
        """A signing dialog; when it signed, every screen reloads (the store changed under them)."""

        def done(changed: Any) -> None:
            if changed:
                self.post_message(RefreshRequest(force=True, changed=True))

        self.push_screen(cls(home=self.home, **kwargs), done)

    def on_resolve_request(self, message: ResolveRequest) -> None:
        if message.item is None:
            self.notify(_("No conflict selected."), markup=False)
            return
        self.open_dialog(ResolveDialog, item=message.item, action=message.action)

    @work(group="dialog", exclusive=True, exit_on_error=False)
    async def action_sign_exception(self) -> None:
        self.open_dialog(ExceptionDialog, policy=await self.view.run(lambda r: r.retention()))

    @work(group="evict", exclusive=True, exit_on_error=False)
    async def action_evict_now(self) -> None:
        try:
            witnesses = await self.view.run(lambda r: (r.witnesses(self.clock()), r.retention_seconds()))
        except Exception as exc:
            self.notify(_("Cannot read the store: %(error)s", error=said(exc, 160)), severity="error", markup=False)
            return
        w, policy = witnesses
        body = Text(_(
            "Forget the %(n)s frame ids first seen before %(when)s (kept %(policy)s)?\n\nCases stay in the "
            "ledger, and a re-sent frame is still caught as a duplicate. The run is logged.",
            n=count(w.due), when=stamp(w.cutoff), policy=describe(policy)))
        if await self.push_screen_wait(ConfirmDialog(N_("Run eviction now"), body, yes=N_("Forget them"))):
            self._evict("console")
        else:
            self.notify(_("Eviction cancelled; nothing was removed."), title=_("Retention"), markup=False, timeout=4)

    @work(thread=True, group="evict", exit_on_error=False)
    def _evict(self, started_by: str) -> None:
        """Age-only eviction on its own connection, in short transactions (R7)."""
        try:
            with Receiver(self.store_target) as receiver:
                removed = receiver.evict(now=self.clock(), started_by=started_by)
        except Exception as exc:
            log.exception("eviction failed")
            self.notify(_("Eviction failed: %(error)s", error=said(exc, 160)), severity="error", markup=False)
            return
        if started_by != "schedule" or removed:
            self.notify(ngettext("Eviction forgot %(n)s old frame id; the cases stay.",
                                 "Eviction forgot %(n)s old frame ids; the cases stay.", removed, n=count(removed)),
                        title=_("Retention"),
                        markup=False, timeout=5)
        self.inbox.post(RefreshRequest(force=True, changed=True))

    def _eviction_tick(self) -> None:
        if self.eviction is not None and self.eviction.due(self.clock()):
            self._evict("schedule")

    def action_sweep_now(self) -> None:
        if self.service is None:
            self.notify(_("The inbox is not running in this console."), severity="warning", markup=False)
            return
        self._sweep()

    @work(thread=True, group="sweep", exclusive=True, exit_on_error=False)
    def _sweep(self) -> None:
        try:
            handled = self.service.sweep_now()
        except Exception as exc:
            log.exception("sweep failed")
            self.notify(_("Sweep failed: %(error)s", error=said(exc, 160)), severity="error", markup=False)
            return
        self.notify(ngettext("Sweep done: %(n)s file taken.", "Sweep done: %(n)s files taken.", handled,
                             n=count(handled)), title=_("Inbox"),
                    markup=False, timeout=4)
        self.inbox.post(RefreshRequest(force=True))

    # -- the command palette: the actions table, run where each belongs -------------------------
    async def run_table_action(self, action: actions.Action) -> None:
        """Run ``action`` as its key would: on the screen shown when it belongs there, else on the
        first screen it belongs to (the palette's "mark" from Quarantine marks on Ranking)."""
        screen = self.screen
        if "case" in action.scopes and isinstance(screen, CaseScreen):
            await self.run_action(action.action, screen)
            return
        if "app" in action.scopes:
            await self.run_action(action.action)
            return
        tabs = [t for t, _ in actions.TABS if t in action.scopes or "tables" in action.scopes]
        current = self.mounted_panel()
        if current is None or current.TAB_ID not in tabs:
            self.action_show_panel(tabs[0])
        panel = await self._shown_panel()
        if panel is None:
            return
        if action.id == "reject_details":
            table = self.query_one("#rejects-table")
            table.focus()
            table.action_select_cursor()
        elif action.action:
            await self.run_action(action.action, panel)

    async def _shown_panel(self, wait: float = 10.0):
        """The panel on display once it is mounted and has shown the store (a lazily mounted
        panel arrives a moment after its tab), so an action on its selected row finds the row."""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            panel = self.mounted_panel()
            if panel is not None and panel.loaded_version is not None:
                return panel
            await asyncio.sleep(0.02)
        return self.mounted_panel()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette offers every action of the table (``ActionsProvider`` adds their synonyms),
        then Textual's own (theme, screenshot)."""
        for action in actions.palette_entries():
            where = ", ".join(actions.scope_title(s).split(" (")[0].lstrip("12345 ") for s in action.scopes)
            keys = actions.key_label(actions.keys_of(action, self.keymap))
            help_words = _("key %(keys)s | %(where)s", keys=keys, where=where) + actions.needs_words(action)
            yield SystemCommand(action.shown_title, help_words,
                                lambda a=action: self.run_table_action(a))
        yield from (c for c in super().get_system_commands(screen) if c.title != "Quit")
