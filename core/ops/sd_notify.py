"""systemd's notify protocol: ``READY=1``, ``WATCHDOG=1``, ``STATUS=...``, ``STOPPING=1``.

A datagram to the AF_UNIX socket named by ``$NOTIFY_SOCKET`` (a path, or an
abstract name written with a leading ``@``). Without the variable every call
does nothing, so ``watch`` behaves the same by hand and under systemd.
"""

from __future__ import annotations

import os
import socket
import time


class Notifier:
    def __init__(self, environ=os.environ):
        address = environ.get("NOTIFY_SOCKET") or None
        if address and address.startswith("@"):
            address = "\0" + address[1:]
        self.address = address
        usec = environ.get("WATCHDOG_USEC", "")
        pid = environ.get("WATCHDOG_PID", "")
        mine = not pid or (pid.isdigit() and int(pid) == os.getpid())
        # systemd's advice: send the keep-alive at half the configured interval.
        self.watchdog_every = int(usec) / 2e6 if usec.isdigit() and int(usec) > 0 and mine else None
        self._next_watchdog = 0.0
        self._status = None

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *fields: str) -> bool:
        """One datagram of ``KEY=value`` lines; False when there is no socket or it failed."""
        if self.address is None:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.connect(self.address)
                sock.sendall("\n".join(fields).encode("utf-8"))
        except OSError:
            return False  # systemd gone or restarting: nothing to tell, nothing to stop for
        return True

    def ready(self, status: str) -> None:
        self._status = status
        self.send("READY=1", f"STATUS={status}")

    def status(self, status: str) -> None:
        if status != self._status:
            self._status = status
            self.send(f"STATUS={status}")

    def keep_alive(self, healthy: bool) -> None:
        """``WATCHDOG=1`` when due, and only while ``healthy``: a hung or broken receiver is restarted."""
        if self.watchdog_every is None or not healthy:
            return
        now = time.monotonic()
        if now >= self._next_watchdog:
            self._next_watchdog = now + self.watchdog_every
            self.send("WATCHDOG=1")

    def stopping(self) -> None:
        self.send("STOPPING=1", "STATUS=stopping")
