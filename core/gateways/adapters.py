"""One small pure adapter per gateway kind: a raw request in, its messages and its signature check out.

``parse(kind, request)`` returns the ``Message`` list of one post, each with
the gateway's own message id (told apart from a field re-send only for honest
counts: the frame id inside the text stays the dedup key) and its items as the
file inbox would read the message text. Phone numbers (``from``, ``From``,
``phoneNumber``, ``from_number``...) are never read out of a request.

``verify(kind, request, secret, url)`` checks what the kind signs:

- ``smsgate`` (SMS Gateway for Android): ``X-Signature`` is the hex
  HMAC-SHA256 of the raw body followed by the ``X-Timestamp`` header, keyed
  with the signing key;
- ``twilio``: ``X-Twilio-Signature`` is the base64 HMAC-SHA1, keyed with the
  auth token, of the public URL followed by each POST parameter's name and
  value, sorted by name; the URL is the configured public base plus the
  printed path, never one rebuilt from ``Host`` or ``X-Forwarded-*``;
- ``telerivet``: the ``secret`` form field;
- ``africastalking``, ``africastalking-ussd``, ``generic``: nothing is signed;
  the unguessable token in the path is the credential.

A phone's clock may be wrong in the field: a correctly signed post is never
refused for clock skew alone; the skew is returned for the log.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import parse_qsl

from .text import Item, message_items, unreadable

KINDS = ("africastalking", "africastalking-ussd", "smsgate", "twilio", "telerivet", "generic")
SIGNED = {"smsgate", "twilio", "telerivet"}  # kinds that need --secret-file
NEEDS_URL = {"twilio"}  # kinds that need --public-url
SKEW_LOGGED = 300.0  # seconds of clock difference worth a log line (never a refusal)


@dataclass(frozen=True)
class Request:
    """A post as the listener received it: headers with lower-case names, the raw body."""

    headers: Mapping[str, str]
    body: bytes
    path: str = ""  # the path only (the query string is never kept)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass(frozen=True)
class Message:
    """One message of a post: the gateway's id for it (None if it has none) and its items."""

    gateway_id: str | None
    items: list[Item]
    session: str | None = None  # africastalking-ussd: the session the segment belongs to


@dataclass(frozen=True)
class Parsed:
    messages: list[Message] = field(default_factory=list)
    ignored: str | None = None  # an event that carries no message (200, nothing taken)


@dataclass(frozen=True)
class Check:
    ok: bool
    why: str = ""
    skew: float | None = None  # seconds the sender's clock is ahead (+) or behind (-), when it says


# -- reading bodies -------------------------------------------------------------------
def _form(body: bytes) -> list[tuple[str, str]] | None:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        return parse_qsl(text, keep_blank_values=True, strict_parsing=False, max_num_fields=1000)
    except ValueError:
        return None


def _first(pairs: list[tuple[str, str]], name: str) -> str | None:
    for key, value in pairs:
        if key == name:
            return value
    return None


def _json(body: bytes):
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _bad(reason: str, sample: str = "") -> Parsed:
    """An authentic post that cannot be read: one reject, answered 200 (a 4xx starts a retry storm)."""
    return Parsed([Message(None, [(None, unreadable(sample, reason))])])


def _gid(value) -> str | None:
    if value is None or isinstance(value, (dict, list, bool)):
        return None
    text = str(value)
    return text[:200] if text else None


# -- one parser per kind ----------------------------------------------------------------
def _africastalking(req: Request) -> Parsed:
    """SMS callback: form ``from, to, text, date, id, linkId``."""
    pairs = _form(req.body)
    if pairs is None:
        return _bad("bad_encoding")
    return Parsed([Message(_gid(_first(pairs, "id")), message_items(_first(pairs, "text")))])


def _africastalking_ussd(req: Request) -> Parsed:
    """USSD callback: form ``sessionId, serviceCode, phoneNumber, networkCode, text``.

    ``text`` holds every input of the session so far joined by ``*``: every
    segment is offered (a lost callback loses nothing), each with the id
    ``<sessionId>:<n>``, so a segment taken earlier in the session counts as a
    transport repeat, not as a field re-send. The opening dial (empty text)
    holds nothing.
    """
    pairs = _form(req.body)
    if pairs is None:
        return _bad("bad_encoding")
    session = _first(pairs, "sessionId") or ""
    text = _first(pairs, "text")
    if text is None:
        return _bad("no_text")
    segments = [s for s in text.split("*")]
    if segments == [""]:
        return Parsed([], ignored="session opened")
    return Parsed([Message(f"{session}:{n}" if session else None, message_items(seg), session or None)
                   for n, seg in enumerate(segments, start=1) if seg.strip()])


def _smsgate(req: Request) -> Parsed:
    """``{"event": "sms:received", "id", "deviceId", "webhookId", "payload": {"messageId", "message",
    "phoneNumber", "simNumber", "receivedAt"}}``; other events are answered and ignored.

    The message id is the payload's ``messageId``: the app has posted one SMS
    twice under new event ids, so the event ``id`` would miscount retries.
    """
    doc = _json(req.body)
    if not isinstance(doc, dict):
        return _bad("not_json")
    event = doc.get("event")
    if event != "sms:received":
        return Parsed([], ignored=f"event {str(event)[:40]}")
    payload = doc.get("payload")
    if not isinstance(payload, dict):
        return _bad("no_text")
    text = payload.get("message")
    gid = _gid(payload.get("messageId")) or _gid(doc.get("id"))
    return Parsed([Message(gid, message_items(text if isinstance(text, str) else None))])


def _twilio(req: Request) -> Parsed:
    """Form ``MessageSid, AccountSid, From, To, Body, NumMedia, ...``."""
    pairs = _form(req.body)
    if pairs is None:
        return _bad("bad_encoding")
    return Parsed([Message(_gid(_first(pairs, "MessageSid") or _first(pairs, "SmsSid")),
                           message_items(_first(pairs, "Body")))])


def _telerivet(req: Request) -> Parsed:
    """Form ``event=incoming_message, id, from_number, to_number, content, secret, ...``."""
    pairs = _form(req.body)
    if pairs is None:
        return _bad("bad_encoding")
    event = _first(pairs, "event")
    if event != "incoming_message":
        return Parsed([], ignored=f"event {str(event)[:40]}")
    return Parsed([Message(_gid(_first(pairs, "id")), message_items(_first(pairs, "content")))])


def _generic(req: Request) -> Parsed:
    """JSON, one object or a list, of ``{"frame_id", "frame"}`` or ``{"text"}`` (and an optional ``id``)."""
    doc = _json(req.body)
    if isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list) or not doc:
        return _bad("not_json")
    out = []
    for obj in doc:
        if not isinstance(obj, dict):
            out.append(Message(None, [(None, unreadable("", "not_json"))]))
            continue
        gid = _gid(obj.get("id"))
        fid, frame, text = obj.get("frame_id"), obj.get("frame"), obj.get("text")
        if isinstance(fid, str) and isinstance(frame, str):
            out.append(Message(gid, [(fid, frame)]))  # judged by parse, like a frame_id column
        elif isinstance(text, str):
            out.append(Message(gid, message_items(text)))
        elif isinstance(frame, str):
            out.append(Message(gid, message_items(frame)))  # a bare frame: no_frame_id
        else:
            out.append(Message(gid, message_items(None)))
    return Parsed(out)


PARSERS = {
    "africastalking": _africastalking,
    "africastalking-ussd": _africastalking_ussd,
    "smsgate": _smsgate,
    "twilio": _twilio,
    "telerivet": _telerivet,
    "generic": _generic,
}


def parse(kind: str, req: Request) -> Parsed:
    return PARSERS[kind](req)


# -- signatures --------------------------------------------------------------------------
def smsgate_signature(key: bytes, body: bytes, timestamp: str) -> str:
    return hmac.new(key, body + timestamp.encode("utf-8"), hashlib.sha256).hexdigest()


def twilio_signature(auth_token: bytes, url: str, pairs: list[tuple[str, str]]) -> str:
    """Twilio's documented algorithm: the URL, then name and value of each parameter, sorted by name
    (a repeated name once per distinct value, values sorted)."""
    names = sorted({k for k, _v in pairs})
    data = url + "".join(k + v for k in names for v in sorted({v for n, v in pairs if n == k}))
    return base64.b64encode(hmac.new(auth_token, data.encode("utf-8"), hashlib.sha1).digest()).decode("ascii")


def _same(given: str | None, want: str) -> bool:
    return given is not None and hmac.compare_digest(given.strip().encode("utf-8", "replace"), want.encode("utf-8"))


def verify(kind: str, req: Request, secret: bytes | None = None, url: str | None = None,
           now: float | None = None) -> Check:
    """Whether the post is the gateway's own (see the module docstring); never raises."""
    if kind not in SIGNED:
        return Check(True)
    if not secret:
        return Check(False, "no secret configured")
    if kind == "smsgate":
        signature, stamp = req.header("X-Signature"), req.header("X-Timestamp")
        if not signature or stamp is None:
            return Check(False, "unsigned")
        if not _same(signature.lower(), smsgate_signature(secret, req.body, stamp)):
            return Check(False, "bad signature")
        try:
            skew = float(stamp) - (time.time() if now is None else now)
        except ValueError:
            skew = None
        return Check(True, skew=skew)
    pairs = _form(req.body)
    if pairs is None:
        return Check(False, "unreadable form")
    if kind == "twilio":
        if not url:
            return Check(False, "no public URL configured")
        signature = req.header("X-Twilio-Signature")
        if not signature:
            return Check(False, "unsigned")
        return Check(True) if _same(signature, twilio_signature(secret, url, pairs)) else Check(False, "bad signature")
    # telerivet: the webhook secret rides in the form
    if not _same(_first(pairs, "secret"), secret.decode("utf-8", "replace")):
        return Check(False, "unsigned" if _first(pairs, "secret") is None else "bad signature")
    return Check(True)


# -- answers -------------------------------------------------------------------------------
def reply(kind: str, taken: list[str] | None, ussd_prefix: str = "END") -> tuple[str, bytes]:
    """``(content type, body)`` of the 2xx answer, sent only after the commit.

    ``taken`` is the frame ids this post's messages carried (new or already
    had); ``None`` means the commit failed, which only the USSD kind can say to
    its sender (the other kinds get a 503 and re-send).
    """
    if kind == "twilio":
        return "text/xml", b'<?xml version="1.0" encoding="UTF-8"?><Response/>'
    if kind == "africastalking-ussd":
        if taken is None:
            return "text/plain", f"{ussd_prefix} Not saved. Please send again.".encode()
        if not taken:
            return "text/plain", f"{ussd_prefix} Send frame id and frame.".encode()
        return "text/plain", f"{ussd_prefix} Received: {', '.join(taken[:10])}. Thank you.".encode()
    if kind == "generic":
        return "application/json", json.dumps({"ok": True, "frames": taken or []}).encode()
    return "text/plain", b""
