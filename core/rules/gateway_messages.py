"""Which gateway messages are offered to the ledger: a message id seen before is a webhook retry only when
it carries what it carried the first time (pure).

A gateway re-posts a message it got no 2xx for, under the same message id and
with the same content: a webhook retry, whose frames are not offered again (so
the ledger's per-path duplicates stay the field's re-sends alone). A relay that
reuses ids (a counter that starts again, a script that sends ``"id": "m1"``
each time) posts other content under an id already seen: that message is
offered like a new one, its frame ids decide duplicate or conflict, and it is
counted ``reused_ids``. The store keeps, per gateway, each message id's key
with the key of the content it first carried (``content_key``; both hashes,
never the id or the text).

An id taken before contents were kept has none on record: its next message is
offered (nothing can be lost by offering; the frame id decides), counted as a
webhook retry, which it most likely is, and its content is kept from then on.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

UNKNOWN = None  # the content on record for an id taken before contents were kept


@dataclass(frozen=True)
class Verdict:
    offer: bool  # the message's items go to the ledger
    counts: tuple[str, ...]  # the per-gateway counts it adds one to
    record: bool  # its (key, content) is written: a new id, or content for an id that had none


NEW = Verdict(True, ("messages",), True)
RETRY = Verdict(False, ("webhook_retries",), False)
REUSED = Verdict(True, ("messages", "reused_ids"), False)
UNKNOWN_CONTENT = Verdict(True, ("webhook_retries",), True)


def content_key(items) -> str:
    """A message's content as a key: its items (frame id and text, or a reject's masked text and reason)."""
    canonical = [[fid, str(text), getattr(text, "reason", None)] for fid, text in items]
    return hashlib.sha256(json.dumps(canonical, ensure_ascii=True).encode("ascii")).hexdigest()[:32]


def judge(known: dict, key: str, content: str | None) -> Verdict:
    """The verdict on a message with id key ``key`` and content key ``content`` (None: a spooled line from
    before contents were kept), against ``known`` (key -> first content, ``UNKNOWN`` for none kept),
    which it updates as the message is taken: judge a batch's messages in their order."""
    if key not in known:
        known[key] = content
        return NEW
    first = known[key]
    if content is None or first == content:
        return RETRY
    if first is UNKNOWN:
        known[key] = content
        return UNKNOWN_CONTENT
    return REUSED
