"""Telerivet: a form ``event=incoming_message, id, from_number, to_number, content, secret, ...``;
the webhook secret (``--secret-file``) rides in the form's ``secret`` field."""

from __future__ import annotations

from ..adapters import Check, Kind, Message, Parsed, Request, bad, empty_reply, first, form, gid, same, with_secret
from ..text import message_items


def parse(req: Request) -> Parsed:
    pairs = form(req.body)
    if pairs is None:
        return bad("bad_encoding")
    event = first(pairs, "event")
    if event != "incoming_message":
        return Parsed([], ignored=f"event {str(event)[:40]}")
    return Parsed([Message(gid(first(pairs, "id")), message_items(first(pairs, "content")))])


def verify(req: Request, secret: bytes, url: str | None = None, now: float | None = None) -> Check:
    pairs = form(req.body)
    if pairs is None:
        return Check(False, "unreadable form")
    if not same(first(pairs, "secret"), secret.decode("utf-8", "replace")):
        return Check(False, "unsigned" if first(pairs, "secret") is None else "bad signature")
    return Check(True)


KIND = Kind("telerivet", parse, with_secret(verify), empty_reply, signed=True)
