"""Message text to frames, exactly as the file inbox reads a message text (pure).

One ``<frame_id> <frame>`` per line, several lines per message allowed. A
bare frame with no frame id is the reject ``no_frame_id``: it is never applied
under a made-up id or under the gateway's message id, which is new on every
re-send and would count every re-send as a new case.
"""

from __future__ import annotations

from core.rules.columns import SPACE, choose
from core.rules.frame import Unreadable
from core.rules.privacy import mask_phones
from core.rules.text import escape_text

NO_FRAME_IN_TEXT = "no_frame_in_text"
SAMPLE = 120  # characters of a bad line kept in its reject row (as the file inbox keeps)

Item = tuple  # (frame_id or None, text or Unreadable)


def unreadable(text: str, reason: str) -> Unreadable:
    """A reject's text: masked (no phone number at rest) and escaped, bounded."""
    return Unreadable(escape_text(mask_phones(text[: SAMPLE * 4]), SAMPLE), reason)


def message_items(text: str | None) -> list[Item]:
    """The ``(frame_id, frame)`` items of one message text; a message with no frame is one reject."""
    if text is None:
        return [(None, unreadable("", "no_text"))]
    items: list[Item] = []
    for raw in text.split("\n"):
        line = raw.strip(SPACE)
        if not line or line.startswith("#"):
            continue
        fid, frame = choose(None, line, False)  # the file inbox's own rule, no_frame_id included
        if isinstance(frame, Unreadable):
            items.append((None, unreadable(line, frame.reason)))
        else:
            items.append((fid, frame))
    return items or [(None, unreadable("", NO_FRAME_IN_TEXT))]
