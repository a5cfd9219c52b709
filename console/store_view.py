"""The console's one reader of the store, on one thread of its own.

SQLite work never runs on the UI thread. Every query goes through a
single-thread executor, so the console holds exactly one connection (peewee
connections are per thread) and ``PRAGMA data_version`` on that connection
tells reliably whether anyone else committed since the last look.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from core import Receiver


class StoreView:
    def __init__(self, store_target: str):
        self.store_target = store_target
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="console-store")
        self._receiver: Receiver | None = None
        self._closed = threading.Event()

    def _call(self, fn: Callable[..., Any], args: tuple) -> Any:
        if self._receiver is None:
            self._receiver = Receiver(self.store_target)
        return fn(self._receiver, *args)

    def submit(self, fn: Callable[..., Any], *args) -> Future:
        """``fn(receiver, *args)`` on the store thread."""
        return self._pool.submit(self._call, fn, args)

    async def run(self, fn: Callable[..., Any], *args) -> Any:
        """Await ``fn(receiver, *args)`` without blocking the event loop."""
        return await asyncio.wrap_future(self.submit(fn, *args))

    def close(self) -> None:
        """Finish queued work, close the connection on its own thread, stop the thread."""
        if self._closed.is_set():
            return
        self._closed.set()

        def shut() -> None:
            if self._receiver is not None:
                self._receiver.close()
                self._receiver = None

        self._pool.submit(shut)
        self._pool.shutdown(wait=True)
