"""The inbox as the listener's fallback: with the store unavailable, a post's frames go into the inbox.

Its own module because it is a file-writing job (temporary name, fsync, rename,
fsync of the folder) with its own privacy rule (no phone number, no token, no
gateway message id at rest: only the message's key, the hash the store keeps
too), apart from both the HTTP server and the commit.

A spooled file is one gateway's, and each line names the gateway, its
message's key and its content's key, so the inbox takes it in as that
gateway's path would have: ``SpoolFile`` credits the frames to the gateway's
own path (``gw_<name>``), records each message's key with the last line of it
(a later post of that message is a webhook retry) and offers nothing of a
message already taken in with the same content (``messages``). A line with no
content key (a file spooled before contents were kept) is judged by its key
alone, as then. A file of the first format (only ``frame_id`` and ``frame``)
is an ordinary inbox file.
"""

from __future__ import annotations

import json
import os
import secrets
from collections import Counter
from typing import Callable

from core.home import Home, sync_folder
from core.rules.frame import Frame, Unreadable, parse as parse_frame

from . import accounts
from .messages import content_key, judge
from .posts import Post, message_key
from .text import unreadable

PREFIX = "gateway-"
GATEWAY, MESSAGE, CONTENT = "gateway", "gateway_message", "gateway_content"  # none is a frame, text or phone column


def spool(home: Home, posts: list[Post]) -> tuple[list[str], Counter]:
    """The posts' frames as JSON-lines files in the inbox, one per gateway: temporary name, fsync,
    rename, fsync. Returns the names written and the webhook retries left out, per gateway.

    Only frames (each with its frame id) and, for what is not a frame, its
    masked text, each with the gateway's name, its message's key and its
    content's key: no phone number, no token, no gateway message id. A message
    already in a file being written with the same content (the gateway posted
    it again) is left out and counted; one under the same id with other content
    (a relay reusing ids) is written, and judged when the inbox takes it in.
    """
    per_gateway: dict[str, list[str]] = {}
    retries: Counter = Counter()
    seen: set[tuple[str, str, str]] = set()
    for post in posts:
        lines = per_gateway.setdefault(post.name, [])
        for msg in post.messages:
            key = None if msg.gateway_id is None else message_key(msg.gateway_id)
            content = None if key is None else content_key(msg.items)
            if key is not None and (post.name, key, content) in seen:
                retries[(post.name, "webhook_retries")] += 1
                continue
            if key is not None:
                seen.add((post.name, key, content))
            where = {GATEWAY: post.name, MESSAGE: key, **({CONTENT: content} if content else {})}
            for fid, text in msg.items:
                if isinstance(parse_frame(fid, text), Frame):
                    lines.append(json.dumps({"frame_id": fid, "frame": text, **where}))
                else:  # a reject to be: the inbox records it, from its masked text only
                    shown = text if isinstance(text, Unreadable) else unreadable(f"{fid} {text}", "")
                    lines.append(json.dumps({"text": str(shown), **where}))
    names = [_write(home, lines) for lines in per_gateway.values() if lines]
    return names, retries


def _write(home: Home, lines: list[str]) -> str:
    inbox = home.inbox
    # Letters only: a run of digits in a name would be masked as a phone number in the logs.
    name = PREFIX + "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(16)) + ".jsonl"
    temporary = inbox / f".{name}.tmp"
    data = ("\n".join(lines) + "\n").encode("utf-8")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temporary, inbox / name)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    sync_folder(inbox)
    return name


class SpoolFile:
    """A spooled file being taken in: its gateway, and each line's message (key and content key)."""

    def __init__(self, gateway: str, keys: dict[int, tuple[str, str | None]]):
        self.gateway = gateway
        self.source = accounts.source_label(gateway)
        self.keys = keys  # line number -> (message key, content key or None in a file of before)
        self.first_line: dict[tuple, int] = {}
        self.last_line: dict[tuple, int] = {}
        for line, message in sorted(keys.items()):
            self.first_line.setdefault(message, line)
            self.last_line[message] = line

    @classmethod
    def of(cls, db, inbox_name: str, data: bytes) -> "SpoolFile | None":
        """The file as a gateway's spool, or None: not named so, lines of the first format or of more
        than one gateway, or a gateway this store never had (an ordinary inbox file then)."""
        if not (inbox_name.startswith(PREFIX) and inbox_name.endswith(".jsonl")):
            return None
        names, keys = set(), {}
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                return None
            if not isinstance(obj, dict) or not isinstance(obj.get(GATEWAY), str):
                return None
            names.add(obj[GATEWAY])
            key, content = obj.get(MESSAGE), obj.get(CONTENT)
            if isinstance(key, str) and key:
                keys[number] = (key, content if isinstance(content, str) and content else None)
        if len(names) != 1:
            return None
        [name] = names
        if not accounts.NAME_RE.fullmatch(name) or accounts.gateway_models(db).Gateway.get_or_none(name=name) is None:
            return None
        return cls(name, keys)

    def take(self, db, chunk: list, after: int, upto: int, now: float) -> tuple[list, Callable[[], None]]:
        """``chunk``'s items (lines ``after`` < line <= ``upto``) less those of webhook retries (a message
        already taken in with the same content), and what to write in the chunk's transaction: the
        keys of the messages ending in it, and the gateway's counts (``messages.judge``)."""
        in_chunk = {self.keys[item[3]] for item in chunk if item[3] in self.keys}
        known = accounts.known_messages(db, self.gateway, sorted({key for key, _content in in_chunk}))
        verdicts = {message: judge(known, *message) for message in sorted(in_chunk, key=self.first_line.get)}
        offered = [item for item in chunk if item[3] not in self.keys or verdicts[self.keys[item[3]]].offer]
        ending = sorted((m for m, last in self.last_line.items() if after < last <= upto), key=self.last_line.get)
        counts: Counter = Counter()
        rows = []
        for message in ending:
            verdict = verdicts.get(message) or judge(known, *message)
            counts.update((self.gateway, what) for what in verdict.counts)
            if verdict.record:
                rows.append((self.gateway, message[0], message[1], now))

        def record() -> None:
            accounts.record_messages(db, rows)
            accounts.bump_counts(db, counts)

        return offered, record
