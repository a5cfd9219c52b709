"""The home's log file, rotated by size; several processes may write it.

``[logs] max_bytes`` and ``backups`` in config.toml set the rotation (10 MiB,
5 old files by default: at most about 60 MB on disk). The watcher and a
console can share one home, so before each line the handler checks that the
file it holds open is still ``receiver.log``: if another process (or an
outside logrotate) has moved it away, it reopens the new one instead of
writing on into the rotated file. When the file cannot be written (a full
disk), one line on stderr says so instead of a traceback per record.

The file is opened without following a symlink (``core.home.open_private``):
a link planted at ``receiver.log`` stops the start with one line naming it,
and later (a link put there after a rotation) is a failure reported the same
way, never a line written into the link's target.
"""

from __future__ import annotations

import logging
import os
import sys
from logging.handlers import RotatingFileHandler

from core.home import open_private


class RotatingLog(RotatingFileHandler):
    def __init__(self, path, max_bytes: int, backups: int, report_failures: bool = True) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8", delay=False)
        self.report_failures = report_failures
        self.failing = False
        self._failed_now = False
        self._opened = self._identity()

    def _open(self):
        return os.fdopen(open_private(self.baseFilename), "a", encoding=self.encoding, errors=self.errors)

    def _identity(self):
        try:
            st = os.fstat(self.stream.fileno()) if self.stream else None
        except (OSError, ValueError):
            return None
        return (st.st_dev, st.st_ino) if st else None

    def _moved(self) -> bool:
        try:
            st = os.stat(self.baseFilename)
        except FileNotFoundError:
            return True
        return (st.st_dev, st.st_ino) != self._opened

    def _reopen(self) -> None:
        if self.stream:
            self.stream.close()
        self.stream = None  # a failed open (a planted link) leaves none, never a closed one
        self.stream = self._open()
        self._opened = self._identity()

    def shouldRollover(self, record: logging.LogRecord) -> bool:
        if self._moved():
            self._reopen()  # someone else rotated it; write to the new file
        if self.maxBytes <= 0:
            return False
        try:
            return os.stat(self.baseFilename).st_size + len(self.format(record)) + 1 >= self.maxBytes
        except FileNotFoundError:
            return False

    def doRollover(self) -> None:
        super().doRollover()
        self._opened = self._identity()

    def emit(self, record: logging.LogRecord) -> None:
        self._failed_now = False
        super().emit(record)
        if self.failing and not self._failed_now:
            self.failing = False
            sys.stderr.write(f"ussd-console: the log file {self.baseFilename} takes lines again\n")

    def handleError(self, record: logging.LogRecord) -> None:
        self._failed_now = True
        if self.failing or not self.report_failures:
            return
        self.failing = True
        exc = sys.exc_info()[1]
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        sys.stderr.write(f"ussd-console: cannot write the log file {self.baseFilename}: {why}; "
                         "logging to stderr only until it can\n")
