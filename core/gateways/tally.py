"""What the log says of gateway posts: each gateway's first post, then a summary a minute.

A line per post cost the listener as much as the rest of answering it (two handlers, a
formatted line and a write each), and at 2,000 posts/s it wrote 170 million lines a day
that nobody reads, with an operator's terminal scrolling them. The first post of each
gateway since the start still has its own line (it tells whoever sets a gateway up that
it reaches us); after it, one line per gateway per minute with the answers by status and
the slowest. Refused and failed posts keep their own warnings where they are decided.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

SUMMARY_EVERY = 60.0  # seconds between two summaries of one gateway's posts
NO_GATEWAY = "-"  # the name of a post to a path that names no gateway


@dataclass
class _Seen:
    statuses: Counter = field(default_factory=Counter)
    slowest_ms: float = 0.0


class PostTally:
    """Posts counted by gateway and answer since the last summary (one event loop uses it)."""

    def __init__(self):
        self._seen: dict[str, _Seen] = {}
        self._named: set[str] = set()  # gateways whose first post has had its own line

    def add(self, name: str, status: int, ms: float) -> str | None:
        """Count a post; the line to log now for a gateway's first post, else None."""
        if name != NO_GATEWAY and name not in self._named:
            self._named.add(name)
            return f"gateway {name}: first post since the start, answered {status} in {ms:.1f} ms"
        seen = self._seen.setdefault(name, _Seen())
        seen.statuses[status] += 1
        seen.slowest_ms = max(seen.slowest_ms, ms)
        return None

    def summary(self, seconds: float) -> list[str]:
        """One line per gateway with posts since the last summary (``seconds`` ago), then start over."""
        lines = []
        for name in sorted(self._seen):
            seen = self._seen[name]
            total = sum(seen.statuses.values())
            answers = ", ".join(f"{n:,} answered {status}" for status, n in sorted(seen.statuses.items()))
            who = "posts to no gateway" if name == NO_GATEWAY else f"gateway {name}"
            lines.append(f"{who}: {total:,} post{'s' if total != 1 else ''} in {seconds:.0f} s: {answers}; "
                         f"slowest {seen.slowest_ms:.1f} ms")
        self._seen.clear()
        return lines
