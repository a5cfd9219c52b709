"""Faults and health of the inbox service: each fault logged once, shown until it clears.

A fault (the store full, read-only or locked, a disk error, a file that cannot
be read, a dead thread) is keyed by what it concerns; it is logged once per
distinct message in one line, stays in ``health()`` while it lasts, and clears
itself when the thing it names works again, so the console can say "recovered".
"""

from __future__ import annotations

import errno
import logging
import os
import time

from core.rules import events
from core.rules.privacy import mask_phones
from core.rules.text import escape_text, one_line
from core.store.database import is_database_error

from .result import FileResult
from .files import split_claim, count_files

log = logging.getLogger("ussd.inbox")


_DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EIO})



def _os_error(exc: OSError) -> str:
    """``strerror`` and the file's name, escaped: no traceback and no raw name in a log line."""
    what = exc.strerror or one_line(exc)
    if exc.filename is not None:
        return f"{what}: {mask_phones(escape_text(os.path.basename(os.fsdecode(exc.filename)), 120))}"
    return what


class FaultsAndHealth:
    """The fault bookkeeping and ``health()`` of ``InboxService`` (its state lives there)."""

    def _delivery_failed(self, path: str, source: str, exc: Exception) -> FileResult:
        """Record why a file could not be delivered; it stays in the inbox and every sweep retries it."""
        name = mask_phones(escape_text(split_claim(os.path.basename(path))[1], 120))
        where = "claimed in the inbox" if os.path.dirname(path) == self._claimed else "in the inbox"
        if is_database_error(exc):
            key = "store"
            message = f"store: {one_line(exc, 200)}; files wait in the inbox and are retried"
            self._store_changed()
        elif isinstance(exc, OSError) and exc.errno in _DISK_ERRORS:
            key = "disk"
            message = f"disk: {_os_error(exc)}; files wait in the inbox and are retried"
        elif isinstance(exc, OSError):
            key = f"file:{path}"
            message = f"{name}: {exc.strerror or one_line(exc, 200)}; left {where}, retried every sweep"
        else:
            key = f"file:{path}"
            message = f"{name}: {exc.__class__.__name__}: {one_line(exc, 200)}; left {where}"
        with self._lock:
            first_time = self._logged_errors.get(path) != message
            self._logged_errors[path] = message
        unexpected = not (is_database_error(exc) or isinstance(exc, OSError))
        self._fault(key, message, exc_info=unexpected)
        if first_time:
            log.info("delivery by %s of %s failed; it waits %s", source, name, where)
        return FileResult(name, source, "error", reason=message)

    def _store_changed(self) -> None:
        """Every thread reopens its connection before its next delivery (``_fresh_connection``).

        SQLite opens a read-only file read-only and the connection stays so after the file
        is writable again: a thread that merely read while the store was read-only would
        fail its next write after the fault cleared and raise it a second time.
        """
        with self._lock:
            self._store_epoch += 1

    def _fresh_connection(self) -> None:
        """In a delivering thread: close this thread's connection if the store changed since it opened."""
        seen = getattr(self._thread_epoch, "value", 0)
        if seen == self._store_epoch:
            return
        self._thread_epoch.value = self._store_epoch
        try:
            self.receiver.db.close()  # peewee's connection is per thread: only this thread's
        except Exception:  # noqa: BLE001 - closing is only a courtesy to the next attempt
            log.debug("closing the connection after a store error failed", exc_info=True)

    def _fault(self, key: str, message: str, exc_info=False) -> bool:
        """Record a fault in force (logged once per distinct message); True if it is news."""
        now = time.time()
        with self._lock:
            old = self._faults.get(key)
            self._faults[key] = (message, old[1] if old else now, now)
            self._last_fault = (message, now)
            news = old is None or old[0] != message
        if news:
            log.warning("%s", message, exc_info=exc_info)
        if old is None:
            self._extras.event(events.fault(key, message, now))
        return news

    def _clear(self, *keys: str) -> None:
        now = time.time()
        with self._lock:
            gone = [(key, self._faults.pop(key)) for key in keys if key in self._faults]
            if gone and not self._faults:
                self._recovered_at = now
        if any(key == "store" for key, _fault in gone):
            self._store_changed()
        for key, (message, since, _seen) in gone:
            log.info("fault cleared after %.1f s: %s", now - since, message)
            self._extras.event(events.fault_cleared(key, message, since, now))

    # -- health ---------------------------------------------------------------------------
    def health(self) -> dict:
        """What the console's header shows: both paths, what waits, and any fault in force.

        ``state`` is ``ok`` or ``fault``; ``last_error`` is the newest fault in
        force (``None`` once everything works again), ``faults`` all of them,
        oldest first; ``last_fault`` and ``recovered_at`` keep the newest fault
        and when the last one cleared, so a console can say "recovered".
        """
        if not self._started or not self.config.observer:
            observer = "off"
        elif self._observer_state == "restarting":
            observer = "restarting"
        else:
            observer = "running" if self._observer_alive() else "dead"
        sweeper = self._threads.get("sweep")
        sweeping = self._started and self.config.sweep and sweeper is not None and sweeper.is_alive()
        with self._lock:
            won = dict(self._claims_won)
            lost = self._claims_lost
            faults = sorted(self._faults.values(), key=lambda f: f[1])
            newest = max(faults, key=lambda f: f[2]) if faults else None
            last_fault = self._last_fault
            recovered_at = self._recovered_at
            restarts = self._observer_restarts
        return {
            "observer": observer,
            "sweep": "running" if sweeping else "off",
            "last_sweep": self._last_sweep,
            "files_waiting": count_files(self._inbox) + count_files(self._claimed),
            "claims_won": won,
            "claims_lost": lost,
            "state": "fault" if faults else "ok",
            "last_error": newest[0] if newest else None,
            "faults": [f[0] for f in faults],
            "fault_since": faults[0][1] if faults else None,
            "last_fault": last_fault[0] if last_fault else None,
            "last_fault_at": last_fault[1] if last_fault else None,
            "recovered_at": recovered_at,
            "observer_restarts": restarts,
            "inbox": self._inbox,
        }
