"""Situation reports on a schedule, written by ``watch``: at ``[report] at`` (or every ``every``
since the last one), the report of the time since the last one (at least the ``every`` just
past, so no case falls between two reports), as HTML and PDF in ``dir``; the
oldest beyond ``keep`` removed; a ``report`` alert event carries the file's path.

A report that cannot be written is a fault of the running receiver (``status --json``, and an
alert, as a failed backup is), cleared by the next report written; it is tried again after
``RETRY`` seconds (or ``every``, if sooner). What happened last is in ``<home>/report-state.json``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Callable

from core.home import private_folder, replace_private, sync_folder
from core.rules import events
from core.rules.text import one_line

from .config import ReportConfig, load_report_config
from .period import Period

log = logging.getLogger("ussd.report")
STATE_NAME = "report-state.json"
FAULT_KEY = "report"
RETRY = 600.0


def read_state(home) -> dict:
    try:
        data = json.loads((Path(home.root) / STATE_NAME).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def due(config: ReportConfig, state: dict, now: float) -> bool:
    """A report is due when none was written since the last scheduled time (or for ``every``
    without ``at``); a failure waits ``RETRY`` seconds (or ``every``) before the next try."""
    if not config.every:
        return False
    made = min(_number((state.get("last_made") or {}).get("at")), now)
    failed = min(_number((state.get("last_failure") or {}).get("at")), now)
    if failed > made and now - failed < min(RETRY, config.every):
        return False
    slot = config.last_slot(now)
    return made < slot if slot is not None else now - made >= config.every


def reports_in(folder: Path) -> list[Path]:
    """The finished reports in a folder, oldest first (temporary names are never listed)."""
    try:
        found = [p for p in Path(folder).iterdir()
                 if p.is_file() and p.name.startswith("report-") and p.suffix in (".html", ".pdf")]
    except OSError:
        return []
    return sorted(found, key=lambda p: (p.stat().st_mtime, p.name))


class ReportSchedule:
    """Owned by ``watch``: ``tick()`` from its loop starts a report when one is due, on a thread of
    its own (a big store never holds up supervision), and raises or clears the fault."""

    def __init__(self, home, store_target: str, config: ReportConfig, targets: list[str],
                 fault: Callable[[str, str], object], clear: Callable[[str], object]):
        self.home, self.store_target, self.config, self.targets = home, store_target, config, targets
        self._fault, self._clear = fault, clear
        self._thread: threading.Thread | None = None
        self._failing = False

    @classmethod
    def for_service(cls, home, store_target: str, service, targets: list[str],
                    config: ReportConfig | None = None) -> "ReportSchedule":
        return cls(home, store_target, config or load_report_config(home.config), targets,
                   fault=service.faults.report, clear=service.faults.clear)

    def finish(self, timeout: float) -> bool:
        """Wait for the report being written, as ``watch`` stops: cut off by the interpreter's exit it
        would be a half-written file, and C code still running as the interpreter ends aborts it."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._thread is None or not self._thread.is_alive()

    def tick(self, now: float | None = None) -> None:
        if not self.config.every:
            return
        now = time.time() if now is None else now
        busy = self._thread is not None and self._thread.is_alive()
        if not busy and due(self.config, read_state(self.home), now):
            self._thread = threading.Thread(target=self.run_once, args=(now,), name="report", daemon=True)
            self._thread.start()

    def run_once(self, now: float | None = None) -> bool:
        """Write the HTML and the PDF, record the alert event, prune: True when both were written."""
        from core.receiver import Receiver
        from core.store.outbox import record_now

        from .write import default_target, figures_for, place

        now = time.time() if now is None else now
        state = read_state(self.home)
        # Since the last report (none missed between two), and at least the ``every`` just past.
        last = _number((state.get("last_made") or {}).get("at"))
        period = Period(min(now - self.config.every, last) if 0 < last < now else now - self.config.every, now)
        try:
            folder = private_folder(self.config.folder(self.home))
            with Receiver(self.store_target) as receiver:
                figures = figures_for(self.home, receiver, period, self.targets, now)
                html = place(figures, "html", default_target(folder, "html", now))
                pdf = place(figures, "pdf", html.file.with_suffix(".pdf"))
                record_now(receiver.db, [events.report(str(html.file), str(pdf.file), html.cases, html.people,
                                                       period.since, period.until)])
        except Exception as exc:  # noqa: BLE001 - any failure is a fault and an alert, never a dead watch
            words = one_line(exc) or type(exc).__name__
            state["last_failure"] = {"at": time.time(), "why": words}
            self._save(state)
            self._fault(FAULT_KEY, f"report failed: {words}")
            self._failing = True
            log.warning("scheduled report failed: %s", words)
            return False
        state["last_made"] = {"at": now, "file": str(html.file), "pdf": str(pdf.file)}
        self._save(state)
        removed = self._prune(folder)
        if self._failing:
            self._clear(FAULT_KEY)
            self._failing = False
        log.info("scheduled report written: %s (%d cases, %d people)%s", html.file, html.cases, html.people,
                 f"; {removed} older files removed" if removed else "")
        return True

    def _save(self, state: dict) -> None:
        path = Path(self.home.root) / STATE_NAME
        try:
            replace_private(path, json.dumps(state, sort_keys=True).encode())
            sync_folder(path.parent)
        except OSError as exc:
            log.warning("could not record the report state: %s", one_line(exc))

    def _prune(self, folder: Path) -> int:
        removed = 0
        for suffix in (".html", ".pdf"):
            kept = [p for p in reports_in(folder) if p.suffix == suffix]
            for path in kept[:max(len(kept) - self.config.keep, 0)]:
                try:
                    path.unlink()
                    removed += 1
                except OSError as exc:
                    log.warning("could not remove an old report %s: %s", path.name, one_line(exc))
        if removed:
            sync_folder(folder)
        return removed
