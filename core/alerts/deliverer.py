"""Delivering the outbox: one thread per target, so a dead target never holds up another or ingest.

Each thread owns its connection to the store and loops: give new events
their per-target rows, lease the head of its own queue, send it outside any
transaction, record the outcome. A failed head is retried after a back-off
that doubles up to a cap, and the rest of that target's queue waits behind it
(first in, first out); other targets and the inbox go on. A target whose head
has been failing for ``fault_after`` seconds raises a fault through
``on_fault`` (the inbox service's, so the console and the health show it),
cleared by the next success. Everything survives restarts: the queue is the
store, not memory.

The outbox is kept in bounds: the first target's thread prunes, at start and
hourly, events every target had delivered more than ``keep_delivered_days``
ago; and a target owing more than ``pending_fault`` alerts (a target dead for a
day) is one fault (``alert backlog: ...``) until its queue is back under it.

While the home's alert targets are paused (a home restored from a backup, ``pause``), no
thread sends anything or writes a checkpoint event: the outbox waits until an admin resumes.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from typing import Callable

from core.clock import SYSTEM, Clock
from core.rules.text import one_line
from core.store import outbox
from core.store.database import StoreError, is_database_error

from . import pause
from .checkpoint import maybe_checkpoint
from .config import AlertsConfig
from .targets import SendError, send

log = logging.getLogger("ussd.alerts")

POLL = 1.0  # seconds between looks at an idle queue
LEASE_MARGIN = 20.0  # a lease outlives the send's own timeout by this much
PRUNE_EVERY = 3600.0  # seconds between prunes of long-delivered events
BACKLOG_EVERY = 5.0  # seconds between counts of a target's queue for the backlog fault
BACKLOG_FAULT = "alert backlog"  # how the fault's message starts (the console's header looks for it)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder_gone(holder: str) -> bool:
    """A lease held by a process of this machine that no longer runs can be taken at once."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    return host == socket.gethostname() and pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid))


class Deliverer:
    """The outbox's delivery threads for one process; see the module docstring."""

    def __init__(self, store_target: str, config: AlertsConfig, on_fault: Callable[[str, str], None] | None = None,
                 on_clear: Callable[[str], None] | None = None, home=None, clock: Clock = SYSTEM):
        """``clock`` is what back-offs, ``fault_after`` and the housekeeping intervals are read on."""
        self.store_target = store_target
        self.clock = clock
        self.home = home  # where a pause would be recorded (None: never paused)
        self.config = config
        self.on_fault = on_fault or (lambda key, message: None)
        self.on_clear = on_clear or (lambda key: None)
        self.me = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._wake = {name: threading.Event() for name in config.targets}
        self._threads: list[threading.Thread] = []
        self._said: dict[str, str] = {}  # target -> the last failure logged
        self._held_said: set[str] = set()  # targets whose pause the log has told
        self._paused: dict[str, str] = {}  # target -> why its thread cannot reach the store
        self._next_prune = 0.0  # monotonic; the housekeeping thread's own
        self._next_backlog: dict[str, float] = {}  # target -> monotonic time of its next count

    def start(self) -> "Deliverer":
        self._stop.clear()
        for name in sorted(self.config.targets):
            thread = threading.Thread(target=self._run, args=(name,), name=f"alerts-{name}", daemon=True)
            self._threads.append(thread)
            thread.start()
        return self

    def wake(self) -> None:
        for event in self._wake.values():
            event.set()

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop; a send under way finishes or times out first (its lease lets another process take it)."""
        self._stop.set()
        self.wake()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = any(t.is_alive() for t in self._threads)
        self._threads = [t for t in self._threads if t.is_alive()]
        return not alive

    def _run(self, target: str) -> None:
        from core.receiver import open_store

        db = None
        checkpoints = target == min(n for n, kinds in self.config.targets.items()) and \
            "checkpoint" in self.config.events
        while not self._stop.is_set():
            try:
                if db is None:
                    db, _m = open_store(self.store_target)
                wait = self._step(db, target, checkpoints)
            except Exception as exc:  # noqa: BLE001 - the store may be locked or full; try again later
                if db is not None:
                    db.close()  # a fresh connection next time (a read-only store stays so on this one)
                    db = None
                why = one_line(exc)
                if self._paused.get(target) != why:  # once per distinct reason, not every 2 s
                    log.warning("alert delivery to %s paused: %s; retrying", target, why,
                                exc_info=not (is_database_error(exc) or isinstance(exc, StoreError)))
                self._paused[target] = why
                wait = 2.0
            else:
                if self._paused.pop(target, None) is not None:
                    log.info("alert delivery to %s resumed", target)
            if wait > 0:
                self._wake[target].wait(wait)
                self._wake[target].clear()
        if db is not None:
            db.close()

    def _step(self, db, target: str, checkpoints: bool) -> float:
        """One pass over ``target``'s queue; returns how long to wait before the next (0: go on)."""
        if self._held(db, target):
            return POLL
        if checkpoints:
            maybe_checkpoint(db)
            self._prune(db)
        if outbox.has_unfanned(db):
            outbox.fan_out(db, self.config.targets, now=self.clock.time())
        self._check_backlog(db, target)  # after the fan-out: what a start finds owed counts at once
        due = outbox.head_due(db, target)
        now = self.clock.time()
        if due is None or due > now:
            self._check_failing(db, target, now)
            return POLL if due is None else max(0.05, min(POLL, due - now))
        got = outbox.claim_next(db, target, self.me, self.config.timeout + LEASE_MARGIN, holder_gone, now=now)
        if not isinstance(got, outbox.Claimed):
            return POLL if got is None else max(0.05, min(POLL, got - now))
        error = None
        try:
            send(target, self.config, got.payload)
        except SendError as exc:
            error = str(exc)
        retry_in = self.config.backoff(got.attempts + 1)
        outbox.finish(db, got.delivery, self.me, error, retry_in, now=self.clock.time())
        self._report(target, got, error, retry_in)
        return 0.0

    def _held(self, db, target: str) -> bool:
        """Whether the home's alert targets are paused; said once in the log when it starts and ends."""
        held = pause.paused(self.home, db) is not None
        if held and target not in self._held_said:
            self._held_said.add(target)
            log.warning("alerts to %s are paused: this home was restored from a backup; an admin checks "
                        "[alerts] in config.toml, then signs `ussd-console alerts resume`", target)
        elif not held and target in self._held_said:
            self._held_said.discard(target)
            log.info("alerts to %s resumed by a signed `alerts resume`", target)
        return held

    def _prune(self, db) -> None:
        if self.clock.monotonic() < self._next_prune:
            return
        self._next_prune = self.clock.monotonic() + PRUNE_EVERY
        days = self.config.keep_delivered_days
        removed = outbox.prune_delivered(db, days * 86400.0, now=self.clock.time())
        if removed:
            log.info("outbox: %d alert event(s) delivered more than %g days ago pruned", removed, days)

    def _check_backlog(self, db, target: str) -> None:
        """One fault while ``target`` owes more than ``pending_fault`` alerts, cleared once it owes fewer."""
        if self.clock.monotonic() < self._next_backlog.get(target, 0.0):
            return
        self._next_backlog[target] = self.clock.monotonic() + BACKLOG_EVERY
        limit = self.config.pending_fault
        key = f"backlog:{target}"
        if outbox.pending_for(db, target) > limit:
            # The same words while it lasts (not the count): one fault, logged once, one event.
            self.on_fault(key, f"{BACKLOG_FAULT}: alert target {target} owes more than {limit:g} alerts "
                               f"(pending_fault); they wait and are retried, oldest first")
        else:
            self.on_clear(key)

    def _report(self, target: str, got: outbox.Claimed, error: str | None, retry_in: float) -> None:
        event = got.payload
        if error is None:
            log.info("alert %s %s delivered to %s%s", event["kind"], event["event_id"], target,
                     f" after {got.attempts + 1} attempts" if got.attempts else "")
            if self._said.pop(target, None) is not None:
                self.on_clear(f"alerts:{target}")
            return
        if self._said.get(target) != error:
            log.warning("alert %s %s to %s failed: %s; retrying in %g s (and later, with back-off)",
                        event["kind"], event["event_id"], target, error, retry_in)
        self._said[target] = error

    def _check_failing(self, db, target: str, now: float) -> None:
        failing = outbox.failing_since(db, target)
        key = f"alerts:{target}"
        if failing is None:
            if self._said.pop(target, None) is not None:
                self.on_clear(key)
            return
        since, _waiting = failing
        if now - since >= self.config.fault_after:
            # The same words while the failure lasts: a fault's message changing is news, logged and shown again.
            why = self._said.get(target) or "failing"
            started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since))
            self.on_fault(key, f"alert target {target} failing since {started} ({why}); its alerts wait and are retried")
