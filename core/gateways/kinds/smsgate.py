"""SMS Gateway for Android: JSON webhooks; ``X-Signature`` is the hex HMAC-SHA256 of the raw body
followed by the ``X-Timestamp`` header, keyed with the signing key (``--secret-file``)."""

from __future__ import annotations

import hashlib
import hmac
import time

from ..adapters import Check, Kind, Message, Parsed, Request, bad, empty_reply, gid, json_body, same, with_secret
from ..text import message_items


def parse(req: Request) -> Parsed:
    """``{"event": "sms:received", "id", "deviceId", "webhookId", "payload": {"messageId", "message",
    "phoneNumber", "simNumber", "receivedAt"}}``; other events are answered and ignored.

    The message id is the payload's ``messageId``: the app has posted one SMS
    twice under new event ids, so the event ``id`` would miscount retries.
    """
    doc = json_body(req.body)
    if not isinstance(doc, dict):
        return bad("not_json")
    event = doc.get("event")
    if event != "sms:received":
        return Parsed([], ignored=f"event {str(event)[:40]}")
    payload = doc.get("payload")
    if not isinstance(payload, dict):
        return bad("no_text")
    text = payload.get("message")
    message_id = gid(payload.get("messageId")) or gid(doc.get("id"))
    return Parsed([Message(message_id, message_items(text if isinstance(text, str) else None))])


def signature(key: bytes, body: bytes, timestamp: str) -> str:
    return hmac.new(key, body + timestamp.encode("utf-8"), hashlib.sha256).hexdigest()


def verify(req: Request, secret: bytes, url: str | None = None, now: float | None = None) -> Check:
    """A correctly signed post is taken whatever the phone's clock says; the skew is told."""
    given, stamp = req.header("X-Signature"), req.header("X-Timestamp")
    if not given or stamp is None:
        return Check(False, "unsigned")
    if not same(given.lower(), signature(secret, req.body, stamp)):
        return Check(False, "bad signature")
    try:
        skew = float(stamp) - (time.time() if now is None else now)
    except ValueError:
        skew = None
    return Check(True, skew=skew)


KIND = Kind("smsgate", parse, with_secret(verify), empty_reply, signed=True)
