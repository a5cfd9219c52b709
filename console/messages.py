"""What the console's widgets and threads ask the app for (Toolong style: a widget posts, the app acts).

Panels and dialogs never call the app's methods to change anything: they post
one of these and ``ConsoleApp`` handles it, so a widget knows nothing of the
app's mixins and a test can post the same message a key press would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from core.store.records import Case, Conflict, RankedCase


@dataclass(eq=False)
class RefreshRequest(Message):
    """Query the store again. ``force``: even if nothing was committed since; ``changed``: this
    console wrote the store itself (a signature, an eviction), which SQLite's ``data_version``
    never reports to the connection that wrote, so every screen reloads, not only the one shown.

    A newer request replaces an older one it covers, so a burst of them is one refresh."""

    force: bool = False
    changed: bool = False

    def can_replace(self, message: Message) -> bool:
        return (isinstance(message, RefreshRequest) and message.force >= self.force
                and message.changed >= self.changed)


@dataclass(eq=False)
class MarkRequest(Message):
    """Mark ``case`` (a case row, None when no row is selected) with ``status``, signed."""

    case: Case | RankedCase | None
    status: str


@dataclass(eq=False)
class ResolveRequest(Message):
    """Resolve the quarantined conflict ``item`` (None: none selected) with ``action``
    (``keep_first`` or ``accept_correction``), signed."""

    item: Conflict | None
    action: str


@dataclass(eq=False)
class SigningChanged(Message):
    """A dialog unlocked (or used) the session's signing key: the header says whose it is."""


@dataclass(eq=False)
class OpenCase(Message):
    """Show a case's history, by id or by key."""

    case_id: int | None = None
    case_key: str | None = None


@dataclass(eq=False)
class ExportRequest(Message):
    """Open the export dialog on ``view``."""

    view: str = "ranking"


@dataclass(eq=False)
class Arrived(Message):
    """Posted from the inbox's thread: verdicts for one file were committed."""

    verdicts: list
    result: Any
