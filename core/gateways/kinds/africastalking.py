"""Africa's Talking, SMS: the callback posts a form ``from, to, text, date, id, linkId``; nothing is
signed (the token in the path is the credential) and the answer is empty."""

from __future__ import annotations

from ..adapters import Kind, Message, Parsed, Request, bad, empty_reply, first, form, gid, unsigned
from ..text import message_items


def parse(req: Request) -> Parsed:
    pairs = form(req.body)
    if pairs is None:
        return bad("bad_encoding")
    return Parsed([Message(gid(first(pairs, "id")), message_items(first(pairs, "text")))])


KIND = Kind("africastalking", parse, unsigned, empty_reply)
