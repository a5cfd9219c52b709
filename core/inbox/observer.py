"""The observer's side of the push path: watchdog events in, offered paths out, never a raise.

``InboxObserver`` runs the watchdog observer on the inbox folder: it starts
and stops it, restarts it when it died (asked by the service's monitor), and
turns the death of a watchdog thread into a fault line instead of a traceback.
An exception in a watchdog handler kills the observer thread, so
``WatchHandler`` only offers paths to the service and logs anything that goes
wrong.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Callable

from core.rules.text import escape_text, one_line

from .faults import Faults

log = logging.getLogger("ussd.inbox")


class _ShutdownRaceFilter(logging.Filter):
    """Drop watchdog's error line for a read racing its own stop: harmless, and alarming in a log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


logging.getLogger("watchdog.observers.inotify").addFilter(_ShutdownRaceFilter())


class WatchHandler:
    """Watchdog handler: turns events into offered paths and never raises."""

    def __init__(self, offer: Callable[[str, bool], None]):
        self.offer = offer  # (path, moved): the service's ``offer``

    def dispatch(self, event) -> None:
        try:
            if event.is_directory:
                return
            if event.event_type == "moved":
                if event.dest_path:
                    self.offer(os.fsdecode(event.dest_path), True)
            elif event.event_type in ("created", "modified", "closed"):
                self.offer(os.fsdecode(event.src_path), False)
        except Exception as exc:  # noqa: BLE001 - a raise here would kill the observer thread
            log.error("inbox event handler failed on %s: %s", escape_text(repr(event), 300), one_line(exc),
                      exc_info=True)


class InboxObserver:
    """The watchdog observer of one inbox folder, kept alive; its faults go to ``faults``.

    ``state`` is ``off``, ``running``, ``restarting`` or ``dead`` (a restart failed)."""

    def __init__(self, offer: Callable[[str, bool], None], faults: Faults):
        self.offer = offer
        self.faults = faults
        self.folder: str | None = None
        self.current = None  # the running watchdog observer
        self.state = "off"
        self.restarts = 0
        self._hooked: tuple[Callable, Callable] | None = None

    def open(self, folder: str) -> None:
        """Watch ``folder`` (the inbox, resolved) until ``close``."""
        self.folder = folder
        self._hook_thread_deaths()
        self._start()

    def close(self, timeout: float = 5.0) -> None:
        self.stop(timeout)
        self.state = "off"
        self._unhook_thread_deaths()

    def _start(self) -> None:
        from watchdog.events import FileClosedEvent, FileCreatedEvent, FileModifiedEvent, FileMovedEvent

        try:
            from watchdog.observers.inotify import InotifyObserver

            # Full events: a file renamed in from outside the inbox is a move, not a creation,
            # so it is known to be whole and taken at once.
            observer = InotifyObserver(generate_full_events=True)
        except (ImportError, OSError):
            from watchdog.observers import Observer

            observer = Observer()
        # Recursive, so the claim's rename into .claimed/ is a paired move and
        # watchdog does not hold the queue back waiting for its other half.
        observer.daemon = True
        try:
            observer.schedule(
                WatchHandler(self.offer), self.folder, recursive=True,
                event_filter=[FileCreatedEvent, FileMovedEvent, FileModifiedEvent, FileClosedEvent],
            )
            observer.start()
        except BaseException:
            # A start that fails half way (inotify limits, a vanished folder) has already opened
            # emitters: stop them, or every retry on the monitor's tick leaks a thread and an
            # inotify instance until the machine has none left.
            self._stop_quietly(observer, 1.0)
            raise
        self.current = observer
        self.state = "running"

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the running observer (the monitor's next look restarts it unless the service stops)."""
        observer, self.current = self.current, None
        if observer is not None:
            self._stop_quietly(observer, timeout)

    @staticmethod
    def _stop_quietly(observer, timeout: float) -> None:
        try:
            observer.stop()  # also closes its inotify instance and thread, started or not
            if observer.is_alive():
                observer.join(timeout)
        except Exception:  # noqa: BLE001 - a dead observer may fail to stop; it is replaced anyway
            log.debug("stopping the observer failed", exc_info=True)

    def alive(self) -> bool:
        observer = self.current
        if observer is None or not observer.is_alive():
            return False
        try:
            return all(e.is_alive() for e in observer.emitters)
        except Exception:  # noqa: BLE001
            return False

    def status(self) -> str:
        """What ``health()`` says of the observer."""
        if self._hooked is None:
            return "off"
        if self.state == "restarting":
            return "restarting"
        return "running" if self.alive() else "dead"

    def keep_alive(self) -> bool:
        """Restart a dead observer; its death is a fault until then. True if it was dead."""
        if self.alive():
            return False
        self.state = "restarting"
        if "observer" not in self.faults:
            self.faults.report("observer", "the inbox observer stopped; restarting it (the sweep covers the gap)")
        self.stop(1.0)
        try:
            self._start()
        except Exception as exc:  # noqa: BLE001 - e.g. inotify limits; retried on the next tick
            self.state = "dead"
            self.faults.report("observer", f"the inbox observer cannot be restarted: {one_line(exc)} "
                                           "(the sweep still delivers)")
        else:
            self.restarts += 1
            log.info("inbox observer restarted")
            self.faults.clear("observer")
        return True

    def _hook_thread_deaths(self) -> None:
        """Turn the death of a watchdog thread into a fault line instead of a traceback on stderr."""
        previous = threading.excepthook

        def hook(args) -> None:
            thread = args.thread
            if (self._hooked is not None and thread is not None and type(thread).__module__.startswith("watchdog")
                    and args.exc_type is not SystemExit):
                self.faults.report("observer", f"the inbox observer died: {one_line(args.exc_value)}; restarting it",
                                   exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
                return
            previous(args)

        threading.excepthook = hook
        self._hooked = (hook, previous)

    def _unhook_thread_deaths(self) -> None:
        if self._hooked is not None:
            hook, previous = self._hooked
            if threading.excepthook is hook:
                threading.excepthook = previous
            self._hooked = None
