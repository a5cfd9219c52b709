"""When a delivering thread of the inbox service reopens its store connection.

SQLite opens a read-only file read-only and the connection stays so after the
file is writable again: a thread that merely read while the store was
read-only would fail its next write after the fault cleared and raise it a
second time. So a store fault and its end each start a new epoch, and every
thread closes its connection before its next delivery in a new epoch.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("ussd.inbox")


class StoreConnections:
    """The store's epoch, and the epoch each thread's connection was opened in."""

    def __init__(self):
        self._lock = threading.Lock()
        self._epoch = 1
        self._seen = threading.local()

    def changed(self) -> None:
        """The store failed or works again: every thread reopens its connection (``refresh``)."""
        with self._lock:
            self._epoch += 1

    def refresh(self, receiver) -> None:
        """In a delivering thread: close this thread's connection if the store changed since it opened."""
        epoch = self._epoch
        if getattr(self._seen, "value", 0) == epoch:
            return
        self._seen.value = epoch
        try:
            receiver.db.close()  # peewee's connection is per thread: only this thread's
        except Exception:  # noqa: BLE001 - closing is only a courtesy to the next attempt
            log.debug("closing the connection after a store error failed", exc_info=True)
