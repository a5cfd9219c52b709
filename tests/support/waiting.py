"""The one way a test waits: poll a condition under a generous deadline.

The deadline only turns a hang into a failure, so it is generous (60 s): a loaded machine is
never one. ``wait_for`` sleeps between polls; ``until`` is the same wait inside an event loop
(Pilot tests), where sleeping would stop the app it waits on. Tools (``tools/``) keep their own
copy, so they never import the tests.
"""

from __future__ import annotations

import asyncio
import time

DEADLINE = 60.0


class _Polls:
    """The deadline and the message, shared by both ways of waiting."""

    def __init__(self, timeout: float, what: str):
        self.timeout, self.what = timeout, what
        self.deadline = time.monotonic() + timeout

    def over(self) -> bool:
        if time.monotonic() > self.deadline:
            raise AssertionError(f"timed out after {self.timeout:g} s waiting for {self.what}")
        return False


def wait_for(predicate, timeout: float = DEADLINE, interval: float = 0.05, what: str = "condition"):
    """Poll until ``predicate()`` is truthy; its value, or an AssertionError naming ``what``."""
    polls = _Polls(timeout, what)
    while True:
        value = predicate()
        if value or polls.over():
            return value
        time.sleep(interval)


async def until(predicate, timeout: float = DEADLINE, pause: float = 0.05, what: str = "condition"):
    """``wait_for`` for a test running inside the event loop: the app keeps running between polls."""
    polls = _Polls(timeout, what)
    while True:
        value = predicate()
        if value or polls.over():
            return value
        await asyncio.sleep(pause)
