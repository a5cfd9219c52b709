"""The inbox as the listener's fallback: with the store unavailable, a post's frames go into the inbox.

Its own module because it is a file-writing job (temporary name, fsync, rename,
fsync of the folder) with its own privacy rule (no phone number, no token, no
gateway message id at rest: only the message's key, the hash the store keeps
too), apart from both the HTTP server and the commit.

A spooled file is one gateway's, and each line names the gateway, its
message's key and its content's key, so the inbox takes it in as that
gateway's path would have (``core.store.spooled``, which both this package
and the inbox may import, reads it back and holds the format's names).
"""

from __future__ import annotations

import json
import os
import secrets
from collections import Counter

from core.home import Home, sync_folder
from core.rules.frame import Frame, Unreadable, parse as parse_frame
from core.rules.gateway_messages import content_key
from core.store.spooled import CONTENT, GATEWAY, MESSAGE, PREFIX

from .posts import Post, message_key
from .text import unreadable


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
