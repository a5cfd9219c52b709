"""The listener's per-gateway rate limit (429 with ``Retry-After`` past it).

Apart from the HTTP code because it is plain arithmetic on a clock, with no server in it.
"""

from __future__ import annotations

import time


class Bucket:
    """A token bucket: ``rate`` posts a second, bursts of ``burst``."""

    def __init__(self, rate: float, burst: float):
        self.rate, self.burst = rate, burst
        self.level, self.at = burst, time.monotonic()

    def take(self) -> float:
        """0 when a post may pass, else the seconds until one may."""
        now = time.monotonic()
        self.level = min(self.burst, self.level + (now - self.at) * self.rate)
        self.at = now
        if self.level >= 1:
            self.level -= 1
            return 0.0
        return (1 - self.level) / self.rate
