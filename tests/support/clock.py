"""A clock a test moves on: the system's time plus what the test has advanced it by.

The inbox service, its settling and its alert deliverer read time from the clock they are given
(``core.clock``). A test gives them a ``TestClock`` and, where it would have slept through a
settle time, a back-off or a target's ``fault_after``, calls ``tick``: the clock jumps, and every
thread of the service looks again at once. Real time still passes beneath it, so file mtimes
(written on the system clock) stay in the past of the test's now.
"""

from __future__ import annotations

import threading
import time

from core.clock import Clock


class TestClock(Clock):
    """The system clock, ``advance``d by the test."""

    __test__ = False  # not a test class, whatever pytest makes of the name

    def __init__(self):
        self._offset = 0.0
        self._lock = threading.Lock()

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._offset += seconds

    def time(self) -> float:
        return time.time() + self._offset

    def monotonic(self) -> float:
        return time.monotonic() + self._offset


def tick(service, clock: TestClock, seconds: float) -> None:
    """Move ``clock`` on by ``seconds`` and have ``service`` (an ``InboxService``) look again now."""
    clock.advance(seconds)
    service.wake()
