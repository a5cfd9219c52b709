"""What runs beside the inbox's two paths: the heartbeat, fault alerts and the alert deliverer.

The inbox service owns one ``ServiceExtras``: started after its threads,
ticked by its monitor thread, stopped before its store closes. Fault events
(a fault starting, a fault clearing) are queued here by the service's fault
bookkeeping and written to the outbox by the monitor thread: a fault is often
the store itself failing, so an event that cannot be written now stays queued
and is written when the store works again.
"""

from __future__ import annotations

import logging
import threading
import time

from core.alerts import AlertsConfig, Deliverer, load_alerts_config
from core.ops.heartbeat import Heartbeat
from core.rules.events import Event
from core.rules.text import one_line
from core.store.database import is_database_error
from core.store.outbox import record_now

log = logging.getLogger("ussd.alerts")

QUEUE_MAX = 1000  # fault events kept while the store cannot take them
RETRY_WRITE = 5.0  # seconds between attempts to write them to a failing store


class ServiceExtras:
    def __init__(self, service, role: str, alerts: AlertsConfig | None):
        self.service = service
        self.role = role
        self.alerts = alerts
        self.heartbeat: Heartbeat | None = None
        self.deliverer: Deliverer | None = None
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._write_after = 0.0
        self._dropped = 0

    def start(self) -> None:
        s = self.service
        self.heartbeat = Heartbeat(s.home, self.role).start()
        try:
            config = self.alerts if self.alerts is not None else load_alerts_config(s.home.config)
        except ValueError as exc:
            s._fault("alerts", f"alerts are off: {one_line(exc)}")
            config = AlertsConfig()
        if config.targets:
            self.deliverer = Deliverer(s.db_path, config, on_fault=s._fault, on_clear=s._clear).start()
        self.tick(force=True)

    def event(self, event: Event) -> None:
        """Queue a fault event (any thread); the monitor writes it."""
        with self._lock:
            if len(self._events) >= QUEUE_MAX:
                self._events.pop(0)
                self._dropped += 1
            self._events.append(event)

    def tick(self, force: bool = False) -> None:
        """On the monitor thread: write queued events, rewrite the heartbeat."""
        self._write_events()
        if self.heartbeat is not None and (force or self.heartbeat.due()):
            h = self.service.health()
            self.heartbeat.beat({
                "observer": h["observer"], "sweep": h["sweep"], "last_sweep_at": h["last_sweep"],
                "files_waiting": h["files_waiting"], "state": h["state"], "faults": h["faults"],
                "claims_won": h["claims_won"], "alerts": sorted(self.deliverer.config.targets) if self.deliverer else [],
            })

    def _write_events(self, tries: int = 1) -> None:
        with self._lock:
            pending, self._events = self._events, []
        if not pending:
            return
        if time.monotonic() < self._write_after or self.service.receiver is None:
            self._requeue(pending)
            return
        for attempt in range(tries):
            try:
                record_now(self.service.receiver.db, pending)
                break
            except Exception as exc:  # noqa: BLE001 - the store may be the fault; kept and written later
                if is_database_error(exc):
                    self.service.receiver.db.close()  # a read-only store stays so on this connection
                if attempt == tries - 1:
                    self._requeue(pending)
                    self._write_after = time.monotonic() + RETRY_WRITE
                    log.debug("fault alerts wait for the store: %s", one_line(exc))
                    return
        if self.deliverer is not None:
            self.deliverer.wake()

    def _requeue(self, pending: list[Event]) -> None:
        with self._lock:
            self._events[:0] = pending
            del self._events[:-QUEUE_MAX]

    def stop(self) -> None:
        if self.deliverer is not None:
            self.deliverer.stop(timeout=2.0)
            self.deliverer = None
        self._write_after = 0.0
        self._write_events(tries=2)  # the second on a fresh connection
        with self._lock:
            if self._events:
                log.warning("%d fault alert(s) could not be written to the outbox before the stop", len(self._events))
        if self.heartbeat is not None:
            self.heartbeat.stop()
            self.heartbeat = None
