"""The observer's side of the push path: watchdog events in, queued paths out, never a raise.

An exception in a watchdog handler kills the observer thread, so the handler
only hands paths to the service's queue and logs anything that goes wrong.
"""

from __future__ import annotations

import logging
import os

from core.rules.text import escape_text, one_line

log = logging.getLogger("ussd.inbox")


class _ShutdownRaceFilter(logging.Filter):
    """Drop watchdog's error line for a read racing its own stop: harmless, and alarming in a log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


logging.getLogger("watchdog.observers.inotify").addFilter(_ShutdownRaceFilter())


class _Handler:
    """Watchdog handler: turns events into queued paths and never raises."""

    def __init__(self, service):
        self.service = service

    def dispatch(self, event) -> None:
        try:
            if event.is_directory:
                return
            if event.event_type == "moved":
                if event.dest_path:
                    self.service._offer(os.fsdecode(event.dest_path), moved=True)
            elif event.event_type in ("created", "modified", "closed"):
                self.service._offer(os.fsdecode(event.src_path), moved=False)
        except Exception as exc:  # noqa: BLE001 - a raise here would kill the observer thread
            log.error("inbox event handler failed on %s: %s", escape_text(repr(event), 300), one_line(exc),
                      exc_info=True)
