"""The inbox service's faults as alerts: their events written to the outbox, and its deliverer.

Fault events (a fault starting, a fault clearing) are queued here by
``Faults`` from any thread and written to the outbox by the service's monitor
thread: a fault is often the store itself failing, so an event that cannot be
written now stays queued and is written when the store works again. The
``Deliverer`` that sends the outbox to the ``[alerts]`` targets runs beside the
service, started after its threads and stopped before its store closes; its own
faults (a target failing) are the service's faults too.
"""

from __future__ import annotations

import logging
import threading

from core.alerts import AlertsConfig, Deliverer, load_alerts_config
from core.clock import SYSTEM, Clock
from core.rules.events import Event
from core.rules.text import one_line
from core.store.database import is_database_error
from core.store.outbox import record_now

log = logging.getLogger("ussd.alerts")

QUEUE_MAX = 1000  # fault events kept while the store cannot take them
RETRY_WRITE = 5.0  # seconds between attempts to write them to a failing store


class FaultAlerts:
    """The queue of fault events, their writes to the outbox, and the alert deliverer."""

    def __init__(self, home, store_target: str, alerts: AlertsConfig | None, clock: Clock = SYSTEM):
        """``alerts`` is the ``[alerts]`` config (default: read from the home's config.toml at ``start``);
        ``clock`` the deliverer's."""
        self.home = home
        self.clock = clock
        self.store_target = store_target
        self.alerts = alerts
        self.receiver = None
        self.deliverer: Deliverer | None = None
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._write_after = 0.0
        self._dropped = 0

    def start(self, receiver, faults) -> None:
        """Write to ``receiver``'s store from now on; start the deliverer if there are targets."""
        self.receiver = receiver
        try:
            config = self.alerts if self.alerts is not None else load_alerts_config(self.home.config)
        except ValueError as exc:
            faults.report("alerts", f"alerts are off: {one_line(exc)}")
            config = AlertsConfig()
        if config.targets:
            self.deliverer = Deliverer(self.store_target, config, on_fault=faults.report, on_clear=faults.clear,
                                       home=self.home, clock=self.clock).start()

    @property
    def targets(self) -> list[str]:
        """The alert targets being delivered to (for the heartbeat)."""
        return sorted(self.deliverer.config.targets) if self.deliverer else []

    def event(self, event: Event) -> None:
        """Queue a fault event (any thread); the monitor writes it."""
        with self._lock:
            if len(self._events) >= QUEUE_MAX:
                self._events.pop(0)
                self._dropped += 1
            self._events.append(event)

    def write(self, tries: int = 1) -> None:
        """On the monitor thread: write the queued events to the outbox, unless the store is failing."""
        with self._lock:
            pending, self._events = self._events, []
        if not pending:
            return
        if self.clock.monotonic() < self._write_after or self.receiver is None:
            self._requeue(pending)
            return
        for attempt in range(tries):
            try:
                record_now(self.receiver.db, pending)
                break
            except Exception as exc:  # noqa: BLE001 - the store may be the fault; kept and written later
                if is_database_error(exc):
                    self.receiver.db.close()  # a read-only store stays so on this connection
                if attempt == tries - 1:
                    self._requeue(pending)
                    self._write_after = self.clock.monotonic() + RETRY_WRITE
                    log.debug("fault alerts wait for the store: %s", one_line(exc))
                    return
        if self.deliverer is not None:
            self.deliverer.wake()

    def _requeue(self, pending: list[Event]) -> None:
        with self._lock:
            self._events[:0] = pending
            del self._events[:-QUEUE_MAX]

    def stop(self) -> None:
        """Stop the deliverer, then write what is queued (the service's threads have stopped)."""
        if self.deliverer is not None:
            self.deliverer.stop(timeout=2.0)
            self.deliverer = None
        self._write_after = 0.0
        self.write(tries=2)  # the second on a fresh connection
        with self._lock:
            if self._events:
                log.warning("%d fault alert(s) could not be written to the outbox before the stop", len(self._events))
