"""Making a whole frame from its body, for an admin who wants a test frame without working the
checksum out by hand (``ussd-console frame``).

The body gets its trailer from ``cksum.trailer`` and the result goes through the same ``parse``
every arriving frame goes through, so a body the receiver would reject is refused here with the
words the Rejects table uses for it (``explain_reject``, which names the field), in English
as the command's other refusals are.
"""

from __future__ import annotations

from typing import NamedTuple

from .cksum import trailer
from .explain import explain_in_english
from .frame import Rejected, parse

BODY_FIELDS = 6
BODY_NAMES = ("H1", "place", "site", "need", "people", "priority")
# A frame id that names only itself: no place in session for ``parse`` to hold the body against.
_ANY_ID = "frame"


class Composed(NamedTuple):
    body: str
    trailer: str
    frame: str  # the whole frame: the body, "|#" and the trailer
    frame_id: str | None


class BadBody(ValueError):
    """The body is not one the receiver would take; the message names the field."""


def compose(body: str, frame_id: str | None = None) -> Composed:
    """The whole frame for ``body`` (the six fields before ``|#``); ``frame_id``, when given, is
    checked against the body's place in session as the receiver checks it."""
    body = body.strip()
    carried = body.rpartition("|#")[2] if "|#" in body else None
    if carried is not None:
        raise BadBody(f"the body already ends in a checksum (#{carried}); give the six fields before '|#'")
    fields = body.split("|")
    if len(fields) != BODY_FIELDS:
        raise BadBody(f"a body has {BODY_FIELDS} fields ({'|'.join(BODY_NAMES)}), got {len(fields) if body else 0}")
    hh = trailer(body) if body.isascii() else "00"
    text = f"{body}|#{hh}"
    checked = parse(frame_id or _ANY_ID, text)
    if isinstance(checked, Rejected):
        raise BadBody(explain_in_english(frame_id or _ANY_ID, text, checked.reason))
    return Composed(body, hh, checked.text, frame_id)
