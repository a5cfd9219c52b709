"""What every gateway kind shares: a request in, its messages and its signature check out (pure).

Each kind is one module of ``core/gateways/kinds/`` declaring one ``Kind``: how
to read its post (``parse``), what it signs (``verify``), what it answers
(``reply``), and whether it needs ``--secret-file`` (``signed``) and
``--public-url`` (``needs_url``); the kind's docs page is
``docs/gateways/<name>.md``. ``parse`` returns the ``Message`` list of one
post, each with the gateway's own message id (told apart from a field re-send
only for honest counts: the frame id inside the text stays the dedup key) and
its items as the file inbox would read the message text. Phone numbers
(``from``, ``From``, ``phoneNumber``, ``from_number``...) are never read out of
a request.

A phone's clock may be wrong in the field: a correctly signed post is never
refused for clock skew alone; the skew is returned for the log.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass, field
from typing import Callable, Mapping
from urllib.parse import parse_qsl

from .text import Item, unreadable

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
    session: str | None = None  # a USSD kind: the session the segment belongs to


@dataclass(frozen=True)
class Parsed:
    messages: list[Message] = field(default_factory=list)
    ignored: str | None = None  # an event that carries no message (200, nothing taken)


@dataclass(frozen=True)
class Check:
    ok: bool
    why: str = ""
    skew: float | None = None  # seconds the sender's clock is ahead (+) or behind (-), when it says


Verify = Callable[[Request, "bytes | None", "str | None", "float | None"], Check]
Reply = Callable[["list[str] | None", str], "tuple[str, bytes] | None"]


@dataclass(frozen=True)
class Kind:
    """One gateway kind, declared once.

    ``verify(request, secret, url, now)`` never raises. ``reply(taken, prefix)`` is the
    ``(content type, body)`` of the 2xx answer, sent only after the commit: ``taken`` is the frame
    ids the post's messages carried (new or already had); ``None`` means the commit failed, which
    only a kind that can say so to its sender answers (the others return None: the listener sends
    503 and the gateway re-sends). ``prefix`` is the account's ``--reply`` (END or CON).
    """

    name: str
    parse: Callable[[Request], Parsed]
    verify: Verify
    reply: Reply
    signed: bool = False  # it signs its posts: the account needs --secret-file
    needs_url: bool = False  # it signs the URL it posts to: the account needs --public-url


# -- reading bodies -------------------------------------------------------------------
def form(body: bytes) -> list[tuple[str, str]] | None:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        return parse_qsl(text, keep_blank_values=True, strict_parsing=False, max_num_fields=1000)
    except ValueError:
        return None


def first(pairs: list[tuple[str, str]], name: str) -> str | None:
    for key, value in pairs:
        if key == name:
            return value
    return None


def json_body(body: bytes):
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def bad(reason: str, sample: str = "") -> Parsed:
    """An authentic post that cannot be read: one reject, answered 200 (a 4xx starts a retry storm)."""
    return Parsed([Message(None, [(None, unreadable(sample, reason))])])


def gid(value) -> str | None:
    if value is None or isinstance(value, (dict, list, bool)):
        return None
    text = str(value)
    return text[:200] if text else None


# -- signatures and answers every kind may use ------------------------------------------------
def same(given: str | None, want: str) -> bool:
    return given is not None and hmac.compare_digest(given.strip().encode("utf-8", "replace"), want.encode("utf-8"))


def unsigned(req: Request, secret: bytes | None = None, url: str | None = None, now: float | None = None) -> Check:
    """A kind that signs nothing: the unguessable token in the path is the credential."""
    return Check(True)


def with_secret(check: Verify) -> Verify:
    """A signed kind's check, refused outright when the account's secret file gave nothing."""

    def verify(req: Request, secret: bytes | None = None, url: str | None = None, now: float | None = None) -> Check:
        if not secret:
            return Check(False, "no secret configured")
        return check(req, secret, url, now)

    return verify


def empty_reply(taken: list[str] | None, prefix: str = "END") -> tuple[str, bytes] | None:
    """An empty 200 once committed; a failed commit cannot be told to the sender (None: 503)."""
    return None if taken is None else ("text/plain", b"")
