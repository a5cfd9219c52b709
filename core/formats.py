"""Reading inbox file contents into ``(frame_id, text, line)`` items (pure).

A line that cannot be read as an item still becomes an item (with a ``None``
id or text), so the receiver records it as a reject with its line number
instead of it vanishing.
"""

from __future__ import annotations

import re
from typing import Iterator

_SEPARATOR = re.compile(r"[ \t,]+")


def plain_lines(text: str) -> Iterator[tuple[str | None, str | None, int]]:
    """``frame_id frame`` per line (space, tab or comma between); blank and ``#`` lines skipped."""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip(" \t\r\n\x0b\x0c")
        if not line or line.startswith("#"):
            continue
        parts = _SEPARATOR.split(line, maxsplit=1)
        if len(parts) != 2:
            yield (parts[0], None, number)
        else:
            yield (parts[0], parts[1], number)
