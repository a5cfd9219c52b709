"""What one delivery pass did with one file: the one result type of the inbox.

In a module of its own because every step that can end a pass (``delivery``
and ``rejecting``) returns one, and neither may import the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class FileResult:
    """What one ``deliver`` call did with one file."""

    name: str  # the file's name in the inbox, escaped for display
    source: str  # the path that carried the file (the claim's winner)
    status: str  # done, held, rejected, lost, skipped, vanished; "error" from InboxService when delivery failed
    reason: str | None = None
    format: str | None = None
    frames: int = 0  # frames ingested by this call
    line: int = 0  # lines of the file committed so far
    claimed_now: bool = False  # this call won the claim (a resume did not)
    claimed: Path | None = None
    archived: Path | None = None
    due: float | None = None  # held: when the file will have settled
    outcomes: dict = field(default_factory=dict)
    verdicts: list = field(default_factory=list)

    @property
    def won(self) -> bool:
        return self.status in ("done", "held", "rejected")
