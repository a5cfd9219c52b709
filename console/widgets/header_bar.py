"""The header: home, inbox health, totals with the conflict badge, and the clock.

Two lines so it fits 80 columns. Every state is a word ("watch ok", "watch
DEAD", "! 2 CONFLICTS OPEN"); colour only repeats what the words say.
"""

from __future__ import annotations

import os
import time
from functools import partial
from typing import Callable

from rich.text import Text
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from console.ui_text import count, inbox_takers
from core.alerts.deliverer import BACKLOG_FAULT
from core.alerts.pause import paused as alerts_paused
from core.backup.schedule import warning as backup_warning
from core.inbox.heartbeat import live
from core.i18n import N_, _, ngettext
from core.rules.text import escape_text
from core.store.records import Totals

OBSERVER = {
    "running": (N_("watch ok"), "ok"),
    "dead": (N_("watch DEAD"), "bad"),
    "off": (N_("watch off"), "dim"),
    "restarting": (N_("watch restarting"), "bad"),
}
BACKUP_CHECK_EVERY = 30.0  # seconds; backups are hours apart
SWEEP = {
    "running": (N_("sweep ok"), "ok"),
    "off": (N_("sweep off"), "dim"),
}

# core.backup.schedule's words, as the header shows them
BACKUP_WORDS = {"BACKUP FAILED": N_("BACKUP FAILED"), "BACKUP OVERDUE": N_("BACKUP OVERDUE"),
                "BACKUP FAULT": N_("BACKUP FAULT")}
HOME_AT_LEAST = 12  # columns the home keeps before the title gives way to it
TAKERS_EVERY = 5.0  # seconds between looks at the home's heartbeats (a console without its own inbox)


def clip_left(text: str, width: int) -> str:
    """Keep the end of a path, which names the home; the start is the least telling part."""
    if len(text) <= width:
        return text
    if width <= 3:
        return text[-width:] if width > 0 else ""
    return "..." + text[-(width - 3):]


def _home_warnings(home) -> tuple[str | None, bool]:
    """The backups' word, and whether alerts are paused since a restore (files in the home)."""
    return backup_warning(home), alerts_paused(home) is not None


class HeaderBar(Widget):
    COMPONENT_CLASSES = {"headerbar--alert", "headerbar--ok", "headerbar--bad", "headerbar--dim",
                         "headerbar--title"}

    DEFAULT_CSS = """
    HeaderBar { height: 2; background: $panel; color: $foreground; padding: 0 1; }
    HeaderBar > .headerbar--alert { background: $error; color: $text; text-style: bold; }
    HeaderBar > .headerbar--ok { color: $text-success; }
    HeaderBar > .headerbar--bad { background: $warning; color: $text; text-style: bold; }
    HeaderBar > .headerbar--dim { color: $text-muted; }
    HeaderBar > .headerbar--title { text-style: bold; }
    """

    def __init__(self, home: str, clock: Callable[[], float] = time.time, **kwargs):
        super().__init__(**kwargs)
        self.home = escape_text(home, 200)
        self.clock = clock
        self.totals: Totals | None = None
        self.health: dict | None = None
        self.service = False
        self.error: str | None = None
        self.unlocked: str | None = None  # whose signing key the session holds
        self.backup: str | None = None  # "BACKUP OVERDUE" / "BACKUP FAILED" when backups need an operator
        self.paused = False  # the home's alert targets are paused since it was restored
        self.takers: list[dict] = []  # live inbox services of other processes on this home (heartbeats)

    def on_mount(self) -> None:
        self.set_interval(1.0, self.refresh)
        self._check_backups()
        self.set_interval(BACKUP_CHECK_EVERY, self._check_backups)
        self.set_interval(TAKERS_EVERY, self._look_for_takers)
        self._look_for_takers()

    def _check_backups(self) -> None:
        """The backups' state is files in the home: read on a worker thread, never on the UI thread."""
        home = getattr(self.app, "home", None)
        if home is not None:
            self.run_worker(partial(_home_warnings, home), thread=True, group="backup-warning", exclusive=True,
                            exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "backup-warning" and event.state == WorkerState.SUCCESS:
            if event.worker.result != (self.backup, self.paused):
                self.backup, self.paused = event.worker.result
                self.refresh()

    def _look_for_takers(self) -> None:
        """Without an inbox of its own, the header says who takes the inbox: a running `watch`
        leaves a heartbeat on the home (a few small files, read off the UI thread)."""
        if not self.service:
            self.run_worker(self._read_takers, thread=True, group="takers", exclusive=True, exit_on_error=False)

    def _read_takers(self) -> None:
        home = getattr(self.app, "home", None)
        if home is None:
            return
        takers = inbox_takers(live(home), os.getpid())
        self.app.call_from_thread(self._set_takers, takers)

    def _set_takers(self, takers: list[dict]) -> None:
        self.takers = takers
        self.refresh()

    def show(self, totals: Totals | None, health: dict | None, service: bool, error: str | None = None) -> None:
        if totals is not None:
            self.totals = totals
        self.health = health
        self.service = service
        self.error = error
        self.refresh()

    def _style(self, name: str):
        return self.get_component_rich_style(f"headerbar--{name}")

    def _health(self) -> Text:
        out = Text()
        if not self.service:
            watch = next((t for t in self.takers if t.get("role") == "watch"), None)
            taker = watch or next(iter(self.takers), None)
            if taker is None:
                out.append(_("inbox off"), style=self._style("dim"))  # nothing takes it on this home now
                return out
            word, kind = OBSERVER.get(taker.get("observer"), ("watch ?", "bad"))
            who = "watch" if taker is watch else str(taker.get("role") or "receiver")
            if kind == "ok":
                out.append(_("%(who)s takes the inbox", who=who), style=self._style("ok"))
            else:
                out.append(_("%(who)s takes the inbox: %(state)s", who=who, state=_(word)), style=self._style(kind))
            waiting = taker.get("files_waiting") or 0
            if waiting:
                out.append(" | " + ngettext("%(n)s file waiting", "%(n)s files waiting", waiting, n=count(waiting)))
            return out
        h = self.health or {}
        word, kind = OBSERVER.get(h.get("observer"), (f"watch {h.get('observer', '?')}", "bad"))
        out.append(_(word), style=self._style(kind))
        out.append(" | ")
        word, kind = SWEEP.get(h.get("sweep"), (f"sweep {h.get('sweep', '?')}", "bad"))
        out.append(_(word), style=self._style(kind))
        waiting = h.get("files_waiting") or 0
        if waiting:
            out.append(" | " + ngettext("%(n)s file waiting", "%(n)s files waiting", waiting, n=count(waiting)))
        faults = h.get("faults") or []
        backlog = [f for f in faults if f.startswith(BACKLOG_FAULT)]
        if backlog:
            out.append(_(" | ! ALERT BACKLOG"), style=self._style("bad"))  # a target owes too many alerts
        if h.get("last_error") and len(backlog) < max(1, len(faults)):
            out.append(_(" | ! inbox error"), style=self._style("bad"))
        return out

    def render(self) -> Text:
        width = max(self.size.width, 20)
        now = time.strftime("%H:%M:%S", time.localtime(self.clock()))
        right = self._health()
        if self.unlocked:
            right.append(" | ")
            right.append(_("key %(name)s unlocked", name=escape_text(self.unlocked, 16)), style=self._style("title"))
        right.append(f" | {now}")
        title = Text(_("USSD console") + " ", style=self._style("title"))
        room = width - len(title) - len(right) - 1
        if room < min(HOME_AT_LEAST, len(self.home)):
            title = Text("")  # the home says more than the product's name (an inbox fault at 80 columns)
            room = width - len(right) - 1
        line = title + Text(clip_left(self.home, max(room, 0)))
        line.append(" " * max(1, width - len(line) - len(right)))
        line.append_text(right)
        line.truncate(width)
        line.append("\n")
        line.append_text(self._totals_line())
        return line

    def _totals_line(self) -> Text:
        out = Text()
        if self.error:
            out.append(_("! store error: %(error)s", error=escape_text(self.error, 100)), style=self._style("bad"))
            return out
        t = self.totals
        if t is None:
            out.append(_("reading the store..."), style=self._style("dim"))
            return out
        # The alert comes first, so huge totals at 80 columns can only push the counts off the end.
        open_ = t.conflicts_open
        if open_:
            words = ngettext("! %(n)s CONFLICT OPEN", "! %(n)s CONFLICTS OPEN", open_, n=count(open_))
            out.append(f" {words} ", style=self._style("alert"))
            out.append(" ")
        else:
            out.append(_("conflicts 0") + " | ")
        if t.retention_fault:
            out.append(" " + _("! RETENTION FAULT") + " ", style=self._style("alert"))
            out.append(" ")
        if self.backup:
            out.append(f" ! {_(BACKUP_WORDS.get(self.backup, self.backup))} ", style=self._style("alert"))
            out.append(" ")
        if self.paused:
            out.append(" " + _("! ALERTS PAUSED") + " ", style=self._style("alert"))  # since a restore: `alerts resume`
            out.append(" ")
        out.append(_("cases %(cases)s | people %(people)s | duplicates %(duplicates)s | rejects %(rejects)s",
                     cases=count(t.cases), people=count(t.headcount_total), duplicates=count(t.duplicates),
                     rejects=count(t.rejects)))
        out.truncate(max(self.size.width, 20), overflow="ellipsis")
        return out
