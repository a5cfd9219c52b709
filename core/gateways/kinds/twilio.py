"""Twilio: a form ``MessageSid, AccountSid, From, To, Body, NumMedia, ...``; ``X-Twilio-Signature``
is the base64 HMAC-SHA1, keyed with the auth token (``--secret-file``), of the public URL followed
by each POST parameter's name and value, sorted by name. The URL is the configured public base
(``--public-url``) plus the printed path, never one rebuilt from ``Host`` or ``X-Forwarded-*``."""

from __future__ import annotations

import base64
import hashlib
import hmac

from ..adapters import Check, Kind, Message, Parsed, Request, bad, first, form, gid, same, with_secret
from ..text import message_items

EMPTY_TWIML = b'<?xml version="1.0" encoding="UTF-8"?><Response/>'


def parse(req: Request) -> Parsed:
    pairs = form(req.body)
    if pairs is None:
        return bad("bad_encoding")
    return Parsed([Message(gid(first(pairs, "MessageSid") or first(pairs, "SmsSid")),
                           message_items(first(pairs, "Body")))])


def signature(auth_token: bytes, url: str, pairs: list[tuple[str, str]]) -> str:
    """Twilio's documented algorithm: the URL, then name and value of each parameter, sorted by name
    (a repeated name once per distinct value, values sorted)."""
    names = sorted({k for k, _v in pairs})
    data = url + "".join(k + v for k in names for v in sorted({v for n, v in pairs if n == k}))
    return base64.b64encode(hmac.new(auth_token, data.encode("utf-8"), hashlib.sha1).digest()).decode("ascii")


def verify(req: Request, secret: bytes, url: str | None = None, now: float | None = None) -> Check:
    pairs = form(req.body)
    if pairs is None:
        return Check(False, "unreadable form")
    if not url:
        return Check(False, "no public URL configured")
    given = req.header("X-Twilio-Signature")
    if not given:
        return Check(False, "unsigned")
    return Check(True) if same(given, signature(secret, url, pairs)) else Check(False, "bad signature")


def reply(taken: list[str] | None, prefix: str = "END") -> tuple[str, bytes] | None:
    return None if taken is None else ("text/xml", EMPTY_TWIML)


KIND = Kind("twilio", parse, with_secret(verify), reply, signed=True, needs_url=True)
