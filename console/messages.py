"""Messages worker threads post to the console app."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class RefreshWanted(Message):
    """Posted from a worker thread: its work changed the store, refresh now."""


class Arrived(Message):
    """Posted from the inbox's thread: verdicts for one file were committed."""

    def __init__(self, verdicts: list, result: Any) -> None:
        super().__init__()
        self.verdicts = verdicts
        self.result = result
