"""Your own sender: JSON, one object or a list, of ``{"frame_id", "frame"}`` or ``{"text"}`` (and an
optional ``id``); nothing is signed, and the answer names the frame ids taken."""

from __future__ import annotations

import json

from ..adapters import Kind, Message, Parsed, Request, bad, gid, json_body, unsigned
from ..text import message_items, unreadable


def parse(req: Request) -> Parsed:
    doc = json_body(req.body)
    if isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list) or not doc:
        return bad("not_json")
    out = []
    for obj in doc:
        if not isinstance(obj, dict):
            out.append(Message(None, [(None, unreadable("", "not_json"))]))
            continue
        message_id = gid(obj.get("id"))
        fid, frame, text = obj.get("frame_id"), obj.get("frame"), obj.get("text")
        if isinstance(fid, str) and isinstance(frame, str):
            out.append(Message(message_id, [(fid, frame)]))  # judged by parse, like a frame_id column
        elif isinstance(text, str):
            out.append(Message(message_id, message_items(text)))
        elif isinstance(frame, str):
            out.append(Message(message_id, message_items(frame)))  # a bare frame: no_frame_id
        else:
            out.append(Message(message_id, message_items(None)))
    return Parsed(out)


def reply(taken: list[str] | None, prefix: str = "END") -> tuple[str, bytes] | None:
    return None if taken is None else ("application/json", json.dumps({"ok": True, "frames": taken or []}).encode())


KIND = Kind("generic", parse, unsigned, reply)
