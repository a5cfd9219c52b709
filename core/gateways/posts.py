"""The records a post travels in: the HTTP thread fills a ``Post``, the committer answers its ``Outcome``.

Their own module because the listener, the committer and the spool all pass them,
and none of those should have to import another to name them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Post:
    """One accepted-for-decision post, waiting for the committer."""

    name: str
    kind: str
    token_hash: str
    messages: list
    ignored: bool
    # The listener's asyncio future for this post's Outcome, set on the listener's own loop
    # (``Listener.answer``): a whole group is answered with one wake-up of that loop.
    waiter: Any = None


@dataclass
class Outcome:
    status: str  # taken, spooled, gone, failed
    frame_ids: list = field(default_factory=list)


def message_key(gateway_id: str) -> str:
    return hashlib.sha256(gateway_id.encode("utf-8", "replace")).hexdigest()[:32]
