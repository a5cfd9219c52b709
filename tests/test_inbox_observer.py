"""The observer's restarts release what a failed start opened.

A watchdog ``InotifyObserver`` opens its inotify instance and a reader thread when it is made,
before it is scheduled or started. When the inbox folder has vanished, every restart on the
monitor's tick fails; each one used to leave that instance and thread behind, until the machine
ran out of inotify instances and every other watcher on it failed too.
"""

from __future__ import annotations

import threading

from core.inbox.faults import Faults
from core.inbox.observer import InboxObserver


def left_behind(before: set) -> list[threading.Thread]:
    """Threads alive now that were not before the test."""
    return [t for t in threading.enumerate() if t not in before]


def test_failed_restarts_leave_no_thread_or_inotify_instance_behind(tmp_path):
    observer = InboxObserver(lambda path, moved: None, Faults())
    observer.folder = str(tmp_path / "vanished")
    before = set(threading.enumerate())  # other tests' threads may end meanwhile: count only new ones
    for _ in range(20):
        assert observer.keep_alive() is True  # dead each time: the folder is not there
    assert observer.state == "dead" and observer.restarts == 0
    assert left_behind(before) == []
    (tmp_path / "vanished").mkdir()
    observer.keep_alive()
    try:
        assert observer.alive() and observer.restarts == 1
        assert left_behind(before)  # the running observer's own threads
    finally:
        observer.close()
    assert left_behind(before) == []
