"""The inbox service: the push and pull paths on their threads, and its health.

``InboxService`` runs the two paths: the observer's handler only queues paths
(an exception in a handler kills the observer thread), a worker thread drains
the queue, a monitor restarts a dead observer, worker or sweep thread, and the
sweep lists the inbox every ``sweep_interval`` as the safety net for events
that never came. A fault (the store full, read-only or locked, a file that
cannot be read, a dead thread) is logged once in one line and shown by
``health()`` until the thing works again; the file it concerns stays in the
inbox and every sweep tries it again.

The service owns its parts: ``observer`` (the watchdog observer, kept
alive), ``faults`` (the faults in force), ``alerts`` (fault events to the
outbox, and the alert deliverer), ``connections`` (when a thread reopens its
store connection), ``settling`` (when a file has settled) and ``heartbeat``;
it keeps the state of the two paths.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import stat
import threading
import time
from collections import Counter
from typing import Callable

from core.clock import SYSTEM, Clock
from core.config import InboxConfig, load_inbox_config
from core.home import Home, count_files, quiet_skip
from core.rules.privacy import mask_phones
from core.rules.text import escape_text, one_line
from core.receiver import Receiver
from core.store.database import is_database_error

from .connections import StoreConnections
from .delivery import deliver
from .fault_alerts import FaultAlerts
from .faults import Faults, delivery_fault, os_error
from .files import claimed_dir, inside_home, kind_skip, masked_name, prepare_home, split_claim
from .heartbeat import Heartbeat
from .observer import InboxObserver
from .rejecting import end_vanished_claims
from .result import FileResult
from .settling import Settling

log = logging.getLogger("ussd.inbox")

# How long a path the watch worker has queued is left to it before the sweep may take it.
OWN_GRACE = 30.0
MONITOR_EVERY = 0.5  # seconds between the monitor's looks at the threads


class InboxService:
    """The inbox's two delivery paths and their health; see the module docstring."""

    def __init__(self, home: Home, store_target: str | None = None, config: InboxConfig | None = None,
                 on_verdicts: Callable[[list, FileResult], None] | None = None, role: str = "receiver",
                 alerts=None, clock: Clock = SYSTEM):
        """``role`` names the process in the heartbeat (``watch``, ``console``); ``alerts`` is the
        ``[alerts]`` config (default: read from the home's config.toml); ``clock`` is what settle
        times, due files and alert back-offs are read on (a test moves its own on, then ``wake``)."""
        self.clock = clock
        self.home = home
        self.config = config if config is not None else load_inbox_config(home.config)
        self.store_target = store_target or str(home.db)
        if self.store_target == ":memory:":
            # Each thread has its own connection, and each would get its own empty store.
            raise ValueError("the inbox service needs a store file, not ':memory:'")
        self.on_verdicts = on_verdicts
        self.role = role
        self.receiver: Receiver | None = None
        self.alerts = FaultAlerts(home, self.store_target, alerts, clock)
        self.faults = Faults(on_event=self.alerts.event)
        self.observer = InboxObserver(self.offer, self.faults)
        self.connections = StoreConnections()
        self.heartbeat: Heartbeat | None = None
        self.settling = Settling(self.config.settle_time, clock)
        self._queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._sweep_wake = threading.Event()
        self._lock = threading.Lock()
        self._sweep_lock = threading.Lock()
        self._owned: dict[str, float] = {}  # paths the watch worker has queued, waits for or holds
        self._waiting: dict[str, tuple[float, bool]] = {}  # worker only: path -> (due, is_claimed)
        self._logged_skips: dict[str, str] = {}
        self._logged_errors: dict[str, str] = {}
        self._claims_won: Counter = Counter()
        self._claims_lost = 0
        self._last_sweep: float | None = None
        self._waiting_count = 0
        self._vanish_checked = 0.0
        self._threads: dict[str, threading.Thread] = {}
        self._started = False
        self._inbox = str(home.inbox)
        self._claimed = str(claimed_dir(home))

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> "InboxService":
        prepare_home(self.home)
        self._inbox = str(inside_home(self.home, self.home.inbox))
        self._claimed = str(inside_home(self.home, claimed_dir(self.home)))
        self.receiver = Receiver(self.store_target)
        self._stop.clear()
        self._started = True
        if self.config.observer:
            self.observer.open(self._inbox)
        self._spawn("worker", self._worker_loop)
        self._spawn("sweep", self._sweep_loop)
        self._spawn("monitor", self._monitor_loop)
        # After the threads; ticked by the monitor from now on.
        self.heartbeat = Heartbeat(self.home, self.role).start()
        self.alerts.start(self.receiver, self.faults)
        self.alerts.write()
        self._beat(force=True)
        log.info("inbox %s: observer %s, sweep %s every %gs, settle %gs", escape_text(self._inbox, 200),
                 "on" if self.config.observer else "off", "on" if self.config.sweep else "off",
                 self.config.sweep_interval, self.config.settle_time)
        return self

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop both paths; a file being read is left claimed at its last commit. True if all stopped."""
        deadline = time.monotonic() + timeout
        self._stop.set()
        self._sweep_wake.set()
        self._queue.put((None, "stop", 0.0))  # wakes the worker at once
        self.observer.close(timeout)
        stopped = True
        for thread in list(self._threads.values()):
            thread.join(max(0.0, deadline - time.monotonic()))
            stopped = stopped and not thread.is_alive()
        self.alerts.stop()  # after the joins: no worker holds the write lock while the last alerts are written
        if self.heartbeat is not None:
            self.heartbeat.stop()
            self.heartbeat = None
        self._threads.clear()
        self._started = False
        if self.receiver is not None and stopped:
            self.receiver.close()
        return stopped

    def wake(self) -> None:
        """Have every thread look again now (the worker at what is due, the sweep, the alert
        deliverer) rather than at its next timeout: after a test has moved its clock on."""
        self._queue.put((None, "wake", 0.0))
        self._sweep_wake.set()
        if self.alerts.deliverer is not None:
            self.alerts.deliverer.wake()

    def __enter__(self) -> "InboxService":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        def run():
            try:
                target()
            except Exception as exc:  # noqa: BLE001 - recorded for health(); the monitor restarts the thread
                self.faults.report(name, f"the inbox {name} thread stopped: {one_line(exc)}; restarting it", exc_info=True)
            finally:
                try:
                    if self.receiver is not None:
                        self.receiver.db.close()  # this thread's connection
                except Exception:  # noqa: BLE001 - closing at exit; nothing left to protect
                    log.debug("closing the %s thread's connection failed", name, exc_info=True)

        thread = threading.Thread(target=run, name=f"inbox-{name}", daemon=True)
        self._threads[name] = thread
        thread.start()

    def thread_alive(self, name: str) -> bool:
        """Whether the ``worker``, ``sweep`` or ``monitor`` thread runs (for a supervisor)."""
        thread = self._threads.get(name)
        return thread is not None and thread.is_alive()

    # -- the monitor ---------------------------------------------------------------------
    def _monitor_loop(self) -> None:
        while not self._stop.wait(MONITOR_EVERY):
            try:
                self._check_threads()
                self.alerts.write()
                self._beat()
                self.faults.clear("monitor")
            except Exception as exc:  # noqa: BLE001 - the monitor itself must outlive what it watches
                self.faults.report("monitor", f"the inbox monitor failed: {one_line(exc)}", exc_info=True)

    def _check_threads(self) -> None:
        """Restart a dead observer, worker or sweep thread; each death is a fault until then."""
        if self.config.observer and not self._stop.is_set() and self.observer.keep_alive():
            self._sweep_wake.set()
        for name, loop in (("worker", self._worker_loop), ("sweep", self._sweep_loop)):
            thread = self._threads.get(name)
            if thread is None or thread.is_alive() or self._stop.is_set():
                continue
            if name == "sweep" and not self.config.sweep:
                continue  # with the sweep off, its thread ends after resuming claimed files at start
            self._spawn(name, loop)
            log.info("inbox %s thread restarted", name)
            self.faults.clear(name)

    def _beat(self, force: bool = False) -> None:
        """Rewrite the heartbeat when it is due: what ``status`` tells of this process."""
        if self.heartbeat is not None and (force or self.heartbeat.due()):
            h = self.health()
            self.heartbeat.beat({
                "observer": h["observer"], "sweep": h["sweep"], "last_sweep_at": h["last_sweep"],
                "files_waiting": h["files_waiting"], "state": h["state"], "faults": h["faults"],
                "claims_won": h["claims_won"], "alerts": self.alerts.targets,
            })

    # -- the push path: handler -> queue -> worker -------------------------------------
    def offer(self, path: str, moved: bool) -> None:
        """A path the observer saw arrive (``moved``: renamed in, so whole); queued for the worker.

        Called on the observer's thread: it only queues, and a path outside the inbox
        or a name never read is passed over."""
        if os.path.dirname(path) != self._inbox or quiet_skip(os.path.basename(path)):
            return
        with self._lock:
            self._owned.setdefault(path, self.clock.monotonic())
        self._queue.put((path, "moved" if moved else "changed", 0.0))

    def _hand_over_held(self, path: str, due: float) -> None:
        """A claimed file still settling: the worker finishes it when it is due."""
        with self._lock:
            self._owned[path] = self.clock.monotonic()
        self._queue.put((path, "held", due))

    def _release(self, path: str) -> None:
        with self._lock:
            self._owned.pop(path, None)

    def _owned_by_worker(self, path: str) -> bool:
        with self._lock:
            since = self._owned.get(path)
        return since is not None and self.clock.monotonic() - since < max(OWN_GRACE, 10 * self.config.sweep_interval)

    def _worker_loop(self) -> None:
        while not self._stop.is_set():
            item = None
            try:
                item = self._queue.get(timeout=self._next_due_in())
            except queue.Empty:
                pass
            try:
                if item is not None and item[0] is not None:
                    path, kind, due = item
                    self._waiting.pop(path, None)
                    if kind == "held":
                        self._waiting[path] = (due, True)
                    else:
                        self._consider(path, moved=kind == "moved")
                self._run_due()
                self._end_vanished()
            except Exception as exc:  # noqa: BLE001 - the sweep takes over what this item was
                self.faults.report("worker", f"the inbox worker failed: {one_line(exc)}", exc_info=True)

    def _end_vanished(self) -> None:
        """Now and then, end the rows of claimed files someone removed (``end_vanished_claims``).

        In the worker's thread, whose connection delivers anyway: a first store access from the
        sweep's thread while the store is read-only would leave that thread a connection that
        fails its first write later, a second fault for one cause.
        """
        now = self.clock.monotonic()
        if now - self._vanish_checked < max(self.config.sweep_interval, 1.0):
            return
        self._vanish_checked = now
        try:
            self.connections.refresh(self.receiver)
            end_vanished_claims(self.receiver, self.home)
        except Exception as exc:  # noqa: BLE001 - a store fault is told by the deliveries; retried next time
            log.debug("checking for vanished claims failed: %s", one_line(exc))

    def _next_due_in(self) -> float:
        if not self._waiting:
            return 0.5
        soonest = min(due for due, _claimed in self._waiting.values())
        return min(0.5, max(0.0, soonest - self.clock.time()))

    def _consider(self, path: str, moved: bool) -> None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self._release(path)
            return
        why = kind_skip(st)
        if why:
            self._log_skip(path, why)
            self._release(path)
            return
        if moved or self.settling.settled(path, st):
            self._release_after(path, self._deliver(path, "watch"))
        else:
            self._waiting[path] = (max(st.st_mtime + self.config.settle_time, self.clock.time() + 0.05), False)

    def _release_after(self, path: str, result: FileResult) -> None:
        self._release(path)
        if result.status == "held" and result.claimed is not None:
            claimed = str(result.claimed)
            with self._lock:
                self._owned[claimed] = self.clock.monotonic()
            self._waiting[claimed] = (result.due or self.clock.time(), True)

    def _run_due(self) -> None:
        now = self.clock.time()
        for path, (due, is_claimed) in list(self._waiting.items()):
            if due > now or self._stop.is_set():
                continue
            del self._waiting[path]
            if is_claimed:
                self._release_after(path, self._deliver(path, "watch"))
            else:
                self._consider(path, moved=False)

    # -- the pull path ------------------------------------------------------------------
    def _sweep_loop(self) -> None:
        self._sweep_once(resume_only=not self.config.sweep)  # held and crashed files first, at once
        if not self.config.sweep:
            return
        while not self._stop.is_set():
            self._sweep_wake.wait(self.config.sweep_interval)
            self._sweep_wake.clear()
            if self._stop.is_set():
                break
            try:
                self._sweep_once()
            except Exception as exc:  # noqa: BLE001 - the next sweep tries again
                self.faults.report("sweep", f"inbox sweep failed: {one_line(exc)}", exc_info=True)

    def sweep_now(self) -> int:
        """One sweep in the caller's thread: resume claimed files, take settled ones. Files handled."""
        if self.receiver is None:
            raise RuntimeError("the inbox service is not started")
        return self._sweep_once()

    @contextlib.contextmanager
    def sweep_paused(self):
        """No sweep runs in this block: arriving files are the observer's alone (a race arranged, not hoped for)."""
        with self._sweep_lock:
            yield

    def _sweepable(self, folder):
        """``(path, lstat)`` of the folder's files the worker does not hold, until a stop."""
        for path in self._listing(folder):
            if self._stop.is_set():
                return
            if self._owned_by_worker(path):
                continue
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            yield path, st

    def _sweep_once(self, resume_only: bool = False) -> int:
        handled = 0
        with self._sweep_lock:
            try:
                for path, st in self._sweepable(self._claimed):
                    if stat.S_ISREG(st.st_mode) and not self.settling.settled(path, st):
                        # Held (its writer may still be at it): the worker finishes it once settled.
                        self._hand_over_held(path, st.st_mtime + self.config.settle_time)
                        continue
                    handled += self._deliver(path, "sweep").won
                for path, st in () if resume_only else self._sweepable(self._inbox):
                    why = kind_skip(st)
                    if why:
                        self._log_skip(path, why)
                        continue
                    if not self.settling.settled(path, st):
                        continue
                    handled += self._deliver(path, "sweep").won
                present = set(self._listing(self._claimed)) | set(self._listing(self._inbox))
            except OSError as exc:  # out of open files too: a fault until a sweep works again
                self.faults.report("sweep", f"inbox sweep failed: {os_error(exc)}")
            else:
                self.faults.clear("sweep")
                self._forget_missing(present)
            self._last_sweep = self.clock.time()
        return handled

    def _forget_missing(self, present: set[str]) -> None:
        self.settling.keep_only(present)
        with self._lock:
            for memo in (self._logged_skips, self._logged_errors):
                for path in [p for p in memo if p not in present]:
                    memo.pop(path, None)
        gone = [key for key in self.faults.keys() if key.startswith("file:") and key[5:] not in present]
        self.faults.clear(*gone)  # a file that failed and then went away (taken, removed) is no fault now

    def _listing(self, folder: str) -> list[str]:
        try:
            with os.scandir(folder) as it:
                names = sorted(e.name for e in it if not quiet_skip(e.name))
        except FileNotFoundError:
            return []
        return [os.path.join(folder, n) for n in names]

    # -- shared by both paths ------------------------------------------------------------
    def _log_skip(self, path: str, why: str) -> None:
        with self._lock:
            if self._logged_skips.get(path) == why:
                return
            self._logged_skips[path] = why
        log.warning("inbox: skipping %s: %s (never read)", masked_name(os.path.basename(path)), why)

    def _deliver(self, path: str, source: str) -> FileResult:
        try:
            self.connections.refresh(self.receiver)
            result = deliver(path, source, self.receiver, self.home, self.config, stop=self._stop, clock=self.clock)
        except Exception as exc:  # noqa: BLE001 - one bad file or a store outage must not stop either path
            return self._delivery_failed(path, source, exc)
        with self._lock:
            self._logged_errors.pop(path, None)
            if result.claimed_now:
                self._claims_won[source] += 1
            elif result.status == "lost":
                self._claims_lost += 1
        self.settling.forget(path)
        if result.won:
            if "store" in self.faults.clear("store", "disk", "files", f"file:{path}"):
                self.connections.changed()  # a connection opened while the store was read-only stays so
        elif result.status in ("lost", "skipped"):
            self.faults.clear(f"file:{path}")
        if result.status == "skipped" and result.reason not in ("hidden name", "temporary name", "being read"):
            self._log_skip(path, result.reason or "skipped")
        if result.won and self.on_verdicts is not None:
            try:
                self.on_verdicts(list(result.verdicts), result)
            except Exception:  # noqa: BLE001 - a UI callback must never break delivery
                log.exception("on_verdicts callback failed for %s", result.name)
        return result

    def _delivery_failed(self, path: str, source: str, exc: Exception) -> FileResult:
        """Record why a file could not be delivered; it stays in the inbox and every sweep retries it."""
        name = mask_phones(escape_text(split_claim(os.path.basename(path))[1], 120))
        where = "claimed in the inbox" if os.path.dirname(path) == self._claimed else "in the inbox"
        key, message = delivery_fault(exc, path, name, where)
        if key == "store":
            self.connections.changed()
        with self._lock:
            first_time = self._logged_errors.get(path) != message
            self._logged_errors[path] = message
        unexpected = not (is_database_error(exc) or isinstance(exc, OSError))
        self.faults.report(key, message, exc_info=unexpected)
        if first_time:
            log.info("delivery by %s of %s failed; it waits %s", source, name, where)
        return FileResult(name, source, "error", reason=message)

    # -- health ---------------------------------------------------------------------------
    def _files_waiting(self) -> int:
        """Counted now, or as last counted when the folders cannot be listed (out of open files):
        asking how the inbox is never fails."""
        try:
            self._waiting_count = count_files(self._inbox) + count_files(self._claimed)
        except OSError:
            pass
        return self._waiting_count

    def health(self) -> dict:
        """What the console's header shows: both paths, what waits, and any fault in force.

        ``state`` is ``ok`` or ``fault``; ``last_error`` is the newest fault in
        force (``None`` once everything works again), ``faults`` all of them,
        oldest first; ``last_fault`` and ``recovered_at`` keep the newest fault
        and when the last one cleared, so a console can say "recovered".
        """
        sweeping = self._started and self.config.sweep and self.thread_alive("sweep")
        with self._lock:
            won = dict(self._claims_won)
            lost = self._claims_lost
        return {
            "observer": self.observer.status(),
            "sweep": "running" if sweeping else "off",
            "last_sweep": self._last_sweep,
            "files_waiting": self._files_waiting(),
            "claims_won": won,
            "claims_lost": lost,
            **self.faults.health(),
            "observer_restarts": self.observer.restarts,
            "inbox": self._inbox,
        }
