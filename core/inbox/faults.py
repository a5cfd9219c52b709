"""The inbox service's faults in force: each logged once, shown until it clears.

A fault (the store full, read-only or locked, a disk error, a file that cannot
be read, a dead thread, a failing alert target) is keyed by what it concerns;
it is logged once per distinct message in one line, stays in ``health()``
while it lasts, and clears itself when the thing it names works again, so the
console can say "recovered". Its start and its end are also events for the
alerts outbox (``fault_alerts``).
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from typing import Callable

from core.rules import events
from core.rules.events import Event
from core.rules.privacy import mask_phones
from core.rules.text import escape_text, one_line
from core.store.database import is_database_error

log = logging.getLogger("ussd.inbox")

DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EIO})
OUT_OF_FILES = frozenset({errno.EMFILE, errno.ENFILE})  # the process's (or the system's) open-file limit
FILES_RETRIED = "files wait in the inbox and are retried"  # how a store or disk fault's message ends


def os_error(exc: OSError) -> str:
    """``strerror`` and the file's name, escaped: no traceback and no raw name in a log line."""
    what = exc.strerror or one_line(exc)
    if exc.filename is not None:
        return f"{what}: {mask_phones(escape_text(os.path.basename(os.fsdecode(exc.filename)), 120))}"
    return what


def delivery_fault(exc: Exception, path: str, name: str, where: str) -> tuple[str, str]:
    """``(key, message)`` of a failed delivery of the file at ``path`` (``name`` escaped, ``where`` it waits).

    The store, the disk and the open-file limit are one fault each, whichever file
    met them; anything else is the file's own."""
    if is_database_error(exc):
        return "store", f"store: {one_line(exc, 200)}; {FILES_RETRIED}"
    if isinstance(exc, OSError) and exc.errno in DISK_ERRORS:
        return "disk", f"disk: {os_error(exc)}; {FILES_RETRIED}"
    if isinstance(exc, OSError) and exc.errno in OUT_OF_FILES:
        return "files", f"open files: {exc.strerror or one_line(exc)} (the limit is reached); {FILES_RETRIED}"
    if isinstance(exc, OSError):
        return f"file:{path}", f"{name}: {exc.strerror or one_line(exc, 200)}; left {where}, retried every sweep"
    return f"file:{path}", f"{name}: {exc.__class__.__name__}: {one_line(exc, 200)}; left {where}"


class Faults:
    """The faults in force, keyed by what each concerns; safe to use from any thread.

    ``on_event`` is handed each fault's start and end as an ``Event`` (it must
    not block: the alerts part only queues it)."""

    def __init__(self, on_event: Callable[[Event], None] | None = None):
        self._on_event = on_event or (lambda event: None)
        self._lock = threading.Lock()
        # What -> (message, since, last seen).
        self._open: dict[str, tuple[str, float, float]] = {}
        # The newest fault and when the last one cleared, kept after they clear for the console.
        self._last: tuple[str, float] | None = None
        self._recovered_at: float | None = None

    def report(self, key: str, message: str, exc_info=False) -> bool:
        """Record a fault in force (logged once per distinct message); True if it is news."""
        now = time.time()
        with self._lock:
            old = self._open.get(key)
            self._open[key] = (message, old[1] if old else now, now)
            self._last = (message, now)
            news = old is None or old[0] != message
        if news:
            log.warning("%s", message, exc_info=exc_info)
        if old is None:
            self._on_event(events.fault(key, message, now))
        return news

    def clear(self, *keys: str) -> list[str]:
        """End the faults named that are in force; the keys that were."""
        now = time.time()
        with self._lock:
            gone = [(key, self._open.pop(key)) for key in keys if key in self._open]
            if gone and not self._open:
                self._recovered_at = now
        for key, (message, since, _seen) in gone:
            log.info("fault cleared after %.1f s: %s", now - since, message)
            self._on_event(events.fault_cleared(key, message, since, now))
        return [key for key, _fault in gone]

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._open

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._open)

    def health(self) -> dict:
        """The fault fields of the service's ``health()`` (see there)."""
        with self._lock:
            faults = sorted(self._open.values(), key=lambda f: f[1])
            last, recovered_at = self._last, self._recovered_at
        newest = max(faults, key=lambda f: f[2]) if faults else None
        return {
            "state": "fault" if faults else "ok",
            "last_error": newest[0] if newest else None,
            "faults": [f[0] for f in faults],
            "fault_since": faults[0][1] if faults else None,
            "last_fault": last[0] if last else None,
            "last_fault_at": last[1] if last else None,
            "recovered_at": recovered_at,
        }
