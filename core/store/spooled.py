"""A gateway's spooled file as the inbox takes it in: the listener wrote it while the store was
unavailable (``core.gateways.spool``), and the inbox reads it back (``core.inbox.delivery``).

Each line names the gateway, its message's key and its content's key, so the
inbox takes the file in as that gateway's path would have: ``SpoolFile``
credits the frames to the gateway's own path (``gw_<name>``), records each
message's key with the last line of it (a later post of that message is a
webhook retry) and offers nothing of a message already taken in with the same
content (``core.rules.gateway_messages``). A line with no content key (a file
spooled before contents were kept) is judged by its key alone, as then. A file
of the first format (only ``frame_id`` and ``frame``) is an ordinary inbox file.
Both the writer and the inbox sit above the store, so the format lives here.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Callable

from core.rules.gateway_messages import judge

from .gateway_tables import NAME_RE, bump_counts, gateway_models, known_messages, record_messages, source_label

PREFIX = "gateway-"
GATEWAY, MESSAGE, CONTENT = "gateway", "gateway_message", "gateway_content"  # none is a frame, text or phone column


class SpoolFile:
    """A spooled file being taken in: its gateway, and each line's message (key and content key)."""

    def __init__(self, gateway: str, keys: dict[int, tuple[str, str | None]]):
        self.gateway = gateway
        self.source = source_label(gateway)
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
        if not NAME_RE.fullmatch(name) or gateway_models(db).Gateway.get_or_none(name=name) is None:
            return None
        return cls(name, keys)

    def take(self, db, chunk: list, after: int, upto: int, now: float) -> tuple[list, Callable[[], None]]:
        """``chunk``'s items (lines ``after`` < line <= ``upto``) less those of webhook retries (a message
        already taken in with the same content), and what to write in the chunk's transaction: the
        keys of the messages ending in it, and the gateway's counts (``messages.judge``)."""
        in_chunk = {self.keys[item[3]] for item in chunk if item[3] in self.keys}
        known = known_messages(db, self.gateway, sorted({key for key, _content in in_chunk}))
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
            record_messages(db, rows)
            bump_counts(db, counts)

        return offered, record
