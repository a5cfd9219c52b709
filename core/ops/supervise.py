"""What ``watch`` does for a supervisor besides taking files: tell systemd how it is (ready,
alive, a short status) and write the metrics file for monitoring every 15 s.

``tick`` runs on ``watch``'s main thread about once a second. ``READY=1`` is
sent once the observer (when configured) and the sweep thread run;
``WATCHDOG=1`` only while the paths and the threads that keep them alive
run, so systemd restarts a receiver that hangs or loses them for good; the metrics are
written whatever the health, since a broken receiver is what they are for.
"""

from __future__ import annotations

import logging
import time

from core.home import PlantedLink
from core.rules.text import one_line

from .health import gather, one_line as status_line
from .metrics import WRITE_EVERY, write_metrics
from .sd_notify import Notifier

log = logging.getLogger("ussd.watch")

STATUS_EVERY = 5.0


class Supervision:
    def __init__(self, home, service, notifier: Notifier, targets: list[str]):
        self.home = home
        self.service = service
        self.notifier = notifier
        self.targets = targets
        self.ready = False
        self._next_metrics = 0.0
        self._next_status = 0.0
        self._metrics_failing: str | None = None

    def _alive(self, name: str) -> bool:
        return self.service.thread_alive(name)

    def _running(self, h: dict) -> bool:
        config = self.service.config
        return (not config.observer or h["observer"] == "running") and (not config.sweep or self._alive("sweep"))

    def _healthy(self, h: dict) -> bool:
        """The monitor restarts a dead observer, worker or sweep; while it runs and they are back
        (or being brought back) a restart by systemd would not help."""
        return h["observer"] != "dead" and self._alive("monitor") and self._alive("worker") and \
            (not self.service.config.sweep or self._alive("sweep"))

    def tick(self) -> None:
        now = time.monotonic()
        h = self.service.health()
        if not self.ready and self._running(h):
            self.ready = True
            self.notifier.ready(f"observer {h['observer']}, sweep {h['sweep']}: receiving")
        if self.ready:
            self.notifier.keep_alive(self._healthy(h))
        due_status, due_metrics = now >= self._next_status, now >= self._next_metrics
        if not (due_status or due_metrics):
            return
        if due_status:
            self._next_status = now + STATUS_EVERY
        if due_metrics:
            self._next_metrics = now + WRITE_EVERY
        try:
            figures = gather(self.home, self.service.receiver, self.targets)
            if due_status:
                self.notifier.status(status_line(figures, self.service.receiver.totals()))
            if due_metrics:
                write_metrics(self.home, self.service.receiver, figures)
                if self._metrics_failing:
                    log.info("metrics file written again")
                    self.service.faults.clear("metrics")
                self._metrics_failing = None
        except PlantedLink as exc:  # someone put a link where the file goes: a fault naming it
            why = one_line(exc)
            self.service.faults.report("metrics", f"metrics file not written: {why}")
            self._metrics_failing = why
        except Exception as exc:  # noqa: BLE001 - a locked store or a full disk; tried again next time
            why = one_line(exc)
            if why != self._metrics_failing:
                log.warning("health figures or metrics file not written: %s", why)
            self._metrics_failing = why
            self.service.receiver.db.close()  # a fresh connection next time
