"""When a file in the inbox has settled: unchanged for ``settle_time``, so its writer is done.

By its mtime, or, for a writer whose clock disagrees with ours, as we watched
it: the first time a path is seen with a given size, mtime and inode starts its
quiet time, and any change starts it again. Both delivery paths ask; one
``Settling`` is shared by them.
"""

from __future__ import annotations

import os
import threading

from core.clock import SYSTEM, Clock


class Settling:
    """What each path looked like when first seen unchanged; safe to use from any thread."""

    def __init__(self, settle_time: float, clock: Clock = SYSTEM):
        self.settle_time = settle_time
        self.clock = clock
        self._lock = threading.Lock()
        self._stable: dict[str, tuple[tuple, float]] = {}  # path -> (stat key, first seen unchanged)

    def settled(self, path: str, st: os.stat_result) -> bool:
        """Unchanged for ``settle_time``: by its mtime, or as we watched it (for clocks that disagree)."""
        now = self.clock.time()
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        with self._lock:
            if now - st.st_mtime >= self.settle_time:
                self._stable.pop(path, None)
                return True
            seen = self._stable.get(path)
            if seen is None or seen[0] != key:
                self._stable[path] = (key, now)
                return self.settle_time == 0
            if now - seen[1] >= self.settle_time:
                del self._stable[path]
                return True
        return False

    def forget(self, path: str) -> None:
        """The path was delivered (or tried): its watch starts afresh if it comes back."""
        with self._lock:
            self._stable.pop(path, None)

    def keep_only(self, present: set[str]) -> None:
        """Forget the paths no longer in the folders."""
        with self._lock:
            for path in [p for p in self._stable if p not in present]:
                del self._stable[path]
