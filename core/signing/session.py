"""A signing session: one operator's key, unlocked once per shift and kept in memory only.

Like sudo's timestamp: the key stays unlocked while it is used and locks by
itself after ``idle_seconds`` without a signature (and on quit, and when the
operator asks). Each action is still previewed and signed one by one; the
session only spares typing the passphrase again. ``idle_seconds = 0`` keeps
nothing: every action asks for the passphrase.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from .keys import Signer


class SigningSession:
    def __init__(self, idle_seconds: float, clock: Callable[[], float] = time.monotonic):
        self.idle_seconds = float(idle_seconds)
        self.clock = clock
        self._signer: Signer | None = None
        self._last_use = 0.0
        self._lock = threading.Lock()

    def _expired(self) -> bool:
        return self._signer is not None and self.clock() - self._last_use >= self.idle_seconds

    def unlock(self, signer: Signer) -> None:
        """Keep ``signer`` for the session (replacing another operator's key)."""
        if self.idle_seconds <= 0:
            return
        with self._lock:
            self._signer = signer
            self._last_use = self.clock()

    def signer_for(self, name: str) -> Signer | None:
        """The unlocked key of ``name``, if the session holds it and has not gone idle; a use
        restarts the idle time."""
        with self._lock:
            if self._expired():
                self._signer = None
            if self._signer is None or self._signer.name != name:
                return None
            self._last_use = self.clock()
            return self._signer

    @property
    def operator(self) -> str | None:
        """Whose key is unlocked now (None when locked or gone idle)."""
        with self._lock:
            return None if self._signer is None or self._expired() else self._signer.name

    def lock_if_idle(self) -> str | None:
        """Drop an idle key; return whose it was, so the operator can be told."""
        with self._lock:
            if not self._expired():
                return None
            name, self._signer = self._signer.name, None
            return name

    def lock(self) -> str | None:
        """Drop the key now; return whose it was."""
        with self._lock:
            name = self._signer.name if self._signer is not None else None
            self._signer = None
            return name
