"""One claimed file as the steps of a delivery pass see it: its names and who took it.

Shared by ``delivery`` (which reads and archives the file) and ``rejecting``
(which ends it another way), so that both are handed one value instead of its
five parts.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from .files import masked_name, split_claim


class Claim(NamedTuple):
    """A file under ``inbox/.claimed/`` and the pass working on it."""

    path: Path
    inbox_name: str  # the name it had in the inbox
    label: str  # the inbox name, escaped and masked for logs, results and the store
    source: str  # the path that won the claim (its progress row's word first, then the claim's name)
    resumer: str  # the path doing this pass

    @classmethod
    def of(cls, path: Path, resumer: str) -> "Claim":
        """From the claimed name alone (before the progress row is read)."""
        named_source, inbox_name = split_claim(path.name)
        return cls(path, inbox_name, masked_name(inbox_name), named_source or resumer, resumer)
