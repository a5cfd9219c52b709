"""Time as an input: the clock the inbox service, settling and alert delivery read.

Settle times, sweep and retry back-offs and a target's ``fault_after`` are all "so long after
then". Read through a ``Clock`` passed in (the system's by default), a test moves time on with
its own clock and a tick instead of sleeping through real timers; nothing else changes.
"""

from __future__ import annotations

import time


class Clock:
    """The system clock: ``time()`` is the wall clock (file mtimes, stored times), ``monotonic()``
    the one for intervals."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


SYSTEM = Clock()
