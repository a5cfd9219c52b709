"""SQLite's WAL checkpoints, run beside the writer instead of inside its commit.

By SQLite's default, the commit that takes the write-ahead log past 1,000 pages then copies them
into the store file and syncs it before ``COMMIT`` returns, on the writer's own thread: on
2026-12-04 that was 0.045 s of a 0.66 s 100,000-frame ingest (its 16 MB of log), and the bare
keyed insert the ingest is measured against stays under the threshold and never paid it. A
checkpoint is not part of durability (R8): the commit is on disk once the log is synced, and
SQLite replays the log after a crash whether or not it was copied. So the store's connections
turn the automatic checkpoint off (``wal_autocheckpoint = 0`` in ``backend.SQLITE_PRAGMAS``), and
each committed write wakes a short-lived thread with its own connection that runs a
``PASSIVE`` checkpoint (it waits for no reader or writer) while the writer goes on, on the other
core. Pokes that come while one runs are folded into one more pass; ``wait`` lets a closing
store finish it, so its own close, the last connection, still leaves no log behind.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from urllib.parse import quote

log = logging.getLogger("ussd.store")


class Checkpoints:
    """The checkpoints of one SQLite store file, one at a time, off the committing thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._running = False
        self._again = False
        self.passes = 0  # checkpoints run (tests wait on it)

    def poke(self) -> None:
        """A write committed: check the log in, now or right after the pass that is running."""
        with self._lock:
            if self._running:
                self._again = True
                return
            self._running, self._again = True, False
            self._thread = threading.Thread(target=self._run, name="ussd-wal-checkpoint", daemon=True)
            self._thread.start()

    def wait(self, timeout: float | None = None) -> None:
        """Until no checkpoint runs (a store about to close)."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        con = None
        try:
            while True:
                try:
                    if con is None:  # read-write, never create: a store that went away is not made again
                        con = sqlite3.connect(f"file:{quote(os.path.abspath(self.path))}?mode=rw", uri=True,
                                              isolation_level=None, check_same_thread=False)
                    con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:
                    # A store that went away or is locked for a moment: the log stays as it is, whole,
                    # and the next commit's pass (or the last close) checks it in.
                    log.debug("WAL checkpoint of %s not done: %s", self.path, exc)
                self.passes += 1
                with self._lock:
                    if not self._again:
                        self._running = False
                        return
                    self._again = False
        finally:
            if con is not None:
                con.close()
