"""The inbox as the listener's fallback: with the store unavailable, a post's frames go into the inbox.

Its own module because it is a file-writing job (temporary name, fsync, rename,
fsync of the folder) with its own privacy rule (no phone number, no token, no
gateway message id at rest), apart from both the HTTP server and the commit.
"""

from __future__ import annotations

import json
import os
import secrets

from core.home import Home, sync_folder
from core.rules.frame import Frame, Unreadable, parse as parse_frame

from .posts import Post
from .text import unreadable


def spool(home: Home, posts: list[Post]) -> str | None:
    """The posts' frames as one JSON-lines file in the inbox: temporary name, fsync, rename, fsync.

    Only frames (each with its frame id) and, for what is not a frame, its
    masked text: no phone number, no token, no gateway message id.
    """
    lines = []
    for post in posts:
        for msg in post.messages:
            for fid, text in msg.items:
                if isinstance(parse_frame(fid, text), Frame):
                    lines.append(json.dumps({"frame_id": fid, "frame": text}))
                else:  # a reject to be: the inbox records it, from its masked text only
                    shown = text if isinstance(text, Unreadable) else unreadable(f"{fid} {text}", "")
                    lines.append(json.dumps({"text": str(shown)}))
    if not lines:
        return None
    inbox = home.inbox
    # Letters only: a run of digits in a name would be masked as a phone number in the logs.
    name = "gateway-" + "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(16)) + ".jsonl"
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
