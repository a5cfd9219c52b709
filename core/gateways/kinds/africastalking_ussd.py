"""Africa's Talking, USSD: the callback posts a form ``sessionId, serviceCode, phoneNumber,
networkCode, text``; nothing is signed, and the answer is the session's next screen (END or CON,
the account's ``--reply``), which can also tell the sender that a commit failed."""

from __future__ import annotations

from ..adapters import Kind, Message, Parsed, Request, bad, first, form, unsigned
from ..text import message_items


def parse(req: Request) -> Parsed:
    """``text`` holds every input of the session so far joined by ``*``: every
    segment is offered (a lost callback loses nothing), each with the id
    ``<sessionId>:<n>``, so a segment taken earlier in the session counts as a
    transport repeat, not as a field re-send. The opening dial (empty text)
    holds nothing.
    """
    pairs = form(req.body)
    if pairs is None:
        return bad("bad_encoding")
    session = first(pairs, "sessionId") or ""
    text = first(pairs, "text")
    if text is None:
        return bad("no_text")
    segments = [s for s in text.split("*")]
    if segments == [""]:
        return Parsed([], ignored="session opened")
    return Parsed([Message(f"{session}:{n}" if session else None, message_items(seg), session or None)
                   for n, seg in enumerate(segments, start=1) if seg.strip()])


def reply(taken: list[str] | None, prefix: str = "END") -> tuple[str, bytes]:
    if taken is None:
        return "text/plain", f"{prefix} Not saved. Please send again.".encode()
    if not taken:
        return "text/plain", f"{prefix} Send frame id and frame.".encode()
    return "text/plain", f"{prefix} Received: {', '.join(taken[:10])}. Thank you.".encode()


KIND = Kind("africastalking-ussd", parse, unsigned, reply)
