"""Checkpoints: a few words about the log, kept outside the machine (docs/rules.md#operators-and-signatures).

Whoever can write the store can cut the log short, or rewrite all of it with
keys of their own, and leave it consistent with itself. A checkpoint written on
paper, sent in a chat message or kept by the alert hook records the entry
count, the hash of the entry at that count, the active operators' key
fingerprints and, once an admin has recorded it, the home's backup key; a log
that still extends it has the same entry at that count, which (the entries
being chained) means the same entries before it, signed by the same keys. The
backup key in the line is what proves a backup's origin on a machine that has
nothing else of the home (``restore --checkpoint``).

One line, short enough to copy by hand, with a check code so that a typo reads
as a typo and never as tampering.
"""

from __future__ import annotations

import hashlib
import json
from typing import NamedTuple

from core.i18n import N_
from core.rules.text import escape_text, worded

from .keys import NAME_RE, ActionError

MAGIC = "ussd-checkpoint"
VERSION = "v1"
PREFIX = 16  # hex digits of each hash written down: 64 bits
PREFIX_MIN = 12
CHECK = 6  # hex digits of the check code
HEX = frozenset("0123456789abcdef")


class CheckpointError(ActionError):
    """A checkpoint that cannot be read: a usage error, never a verdict on the log."""


class Checkpoint(NamedTuple):
    count: int
    head: str  # the hash of entry ``count`` (or a prefix of it)
    operators: dict  # name -> key fingerprint (or a prefix), active at ``count``
    backup: str | None = None  # the home's backup key fingerprint (or a prefix) recorded by ``count``

    def line(self) -> str:
        body = " ".join([MAGIC, VERSION, f"entries={self.count}", f"head={self.head[:PREFIX]}",
                         *(f"op:{name}={fp[:PREFIX]}" for name, fp in sorted(self.operators.items())),
                         *([f"backup={self.backup[:PREFIX]}"] if self.backup else [])])
        return f"{body} check={_check(body)}"

    def as_json(self) -> dict:
        out = {"checkpoint": self.line(), "entries": self.count, "head": self.head,
               "operators": dict(sorted(self.operators.items()))}
        if self.backup:
            out["backup_key"] = self.backup
        return out


def _check(body: str) -> str:
    return hashlib.sha256(body.encode("ascii")).hexdigest()[:CHECK]


HEAD_NOT_HEX = N_("the checkpoint's head is not %(minimum)s to 64 hex digits")
BACKUP_NOT_HEX = N_("the checkpoint's backup key is not %(minimum)s to 64 hex digits")


def _hex(value, refusal: str, minimum: int = PREFIX_MIN, **names: object) -> str:
    """``value`` as lowercase hex, or ``refusal`` (a marked message naming ``%(minimum)s``)."""
    if not isinstance(value, str) or len(value) < minimum or len(value) > 64 or not set(value.lower()) <= HEX:
        raise CheckpointError(refusal, minimum=minimum, **names)
    return value.lower()


def _count(value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isdigit():
        raise CheckpointError(N_("the checkpoint's entry count is not a whole number"))
    return int(value)


def _operators(pairs) -> dict:
    out = {}
    for name, fp in pairs:
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            raise CheckpointError(N_("the checkpoint names an operator in a way no operator is named"))
        out[name] = _hex(fp, N_("the checkpoint's key of %(name)s is not %(minimum)s to 64 hex digits"), name=name)
    return out


def parse(text: str) -> Checkpoint:
    """Read a checkpoint as `audit checkpoint` prints it (text or ``--json``); refuse anything else."""
    text = text.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            raise CheckpointError(N_("the checkpoint is not valid JSON")) from None
        if not isinstance(data, dict) or not isinstance(data.get("operators"), dict):
            raise CheckpointError(N_("the checkpoint JSON lacks entries, head or operators"))
        if "checkpoint" in data and isinstance(data["checkpoint"], str):
            parse(data["checkpoint"])  # its own line must read too: a typo shows
        backup = data.get("backup_key")
        return Checkpoint(_count(data.get("entries")), _hex(data.get("head"), HEAD_NOT_HEX),
                          _operators(data["operators"].items()),
                          None if backup is None else _hex(backup, BACKUP_NOT_HEX))
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith(MAGIC)]
    if not lines:
        raise CheckpointError(N_("no checkpoint found (a line starting with %(magic)s)"), magic=MAGIC)
    body, _, check = lines[0].rpartition(" check=")
    if not body:
        raise CheckpointError(N_("the checkpoint has no check code at its end (check=...)"))
    if _check(body) != check.strip().lower():
        raise CheckpointError(N_("the checkpoint's check code does not match: it was copied with a typo"))
    words = body.split()
    if words[:2] != [MAGIC, VERSION]:
        raise CheckpointError(N_("not a %(magic)s %(version)s line"), magic=MAGIC, version=VERSION)
    fields, ops = {}, []
    for word in words[2:]:
        key, eq, value = word.partition("=")
        if not eq:
            raise CheckpointError(N_("the checkpoint has a word without '=': %(word)s"), word=word[:20])
        if key.startswith("op:"):
            ops.append((key[3:], value))
        else:
            fields[key] = value
    if not {"entries", "head"} <= set(fields) <= {"entries", "head", "backup"}:
        raise CheckpointError(N_("the checkpoint needs entries= and head= (and at most backup=)"))
    backup = fields.get("backup")
    return Checkpoint(_count(fields["entries"]), _hex(fields["head"], HEAD_NOT_HEX), _operators(ops),
                      None if backup is None else _hex(backup, BACKUP_NOT_HEX))


def read(source: str, stdin=None) -> Checkpoint:
    """A checkpoint from a file, or from standard input for ``-``."""
    if source == "-":
        import sys

        text = (stdin or sys.stdin).read(65536)
    else:
        try:
            with open(source, "r", encoding="utf-8") as fh:
                text = fh.read(65536)
        except OSError as exc:
            raise CheckpointError(N_("cannot read the checkpoint file %(path)s: %(reason)s"), path=source,
                                  reason=exc.strerror) from None
        except UnicodeDecodeError:
            raise CheckpointError(N_("the checkpoint file %(path)s is not UTF-8 text"), path=source) from None
    return parse(text)


def problem(cp: Checkpoint, computed: list[str], active_at: dict | None,
            backup_at: str | None = None) -> str | None:
    """Why a verified log does not extend the checkpoint, or None. ``backup_at`` is the backup key
    the log had recorded by the checkpoint's entry."""
    if len(computed) < cp.count:
        return worded(N_("removed: the log holds %(count)s entries but the checkpoint recorded %(recorded)s "
                         "(entries were cut off)"), count=len(computed), recorded=cp.count)
    active = active_at or {}
    for name, fp in sorted(cp.operators.items()):
        now = active.get(name)
        if now is None:
            return worded(N_("rewritten: %(name)s, active at the checkpoint, is not an active operator at entry "
                             "#%(seq)s"), name=escape_text(name, 40), seq=cp.count)
        if not now.startswith(fp):
            return worded(N_("key replaced: %(name)s's key at entry #%(seq)s is %(now)s, the checkpoint recorded "
                             "%(recorded)s (the log was rewritten with other keys)"),
                          name=escape_text(name, 40), seq=cp.count, now=escape_text(now[:PREFIX]), recorded=fp[:PREFIX])
    for name in sorted(set(active) - set(cp.operators)):
        return worded(N_("rewritten: %(name)s is active at entry #%(seq)s but the checkpoint does not list them"),
                      name=escape_text(name, 40), seq=cp.count)
    if cp.backup and not (backup_at or "").startswith(cp.backup):
        if backup_at is None:
            return worded(N_("backup key replaced: the log's backup key at entry #%(seq)s is none, the checkpoint "
                             "recorded %(recorded)s"), seq=cp.count, recorded=cp.backup[:PREFIX])
        return worded(N_("backup key replaced: the log's backup key at entry #%(seq)s is %(now)s, the checkpoint "
                         "recorded %(recorded)s"), seq=cp.count, now=escape_text(backup_at[:PREFIX]),
                      recorded=cp.backup[:PREFIX])
    at = computed[cp.count - 1] if cp.count else "0" * 64
    if not at.startswith(cp.head):
        return worded(N_("rewritten: entry #%(seq)s is not the entry the checkpoint recorded (head %(head)s, now "
                         "%(now)s)"), seq=cp.count, head=cp.head[:PREFIX], now=at[:PREFIX])
    return None


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` becomes ``b`` by dropping one character."""
    return len(a) == len(b) + 1 and any(a[:i] + a[i + 1:] == b for i in range(len(a)))


def near_miss(wanted: str, computed: list[str]) -> int | None:
    """The entry whose hash a mistyped head was most likely meant to be (a slip of one or two
    characters), or None. A cut-off entry's hash is random: it is never this close to another."""
    for pos, h in enumerate(computed, start=1):
        if not h:
            continue
        same = h[: len(wanted)]
        if sum(x != y for x, y in zip(wanted, same)) <= 2 or _one_edit(wanted, h[: len(wanted) - 1]) \
                or _one_edit(h[: len(wanted) + 1], wanted):
            return pos
    return None


def of(count: int, head_hash: str, active: dict, backup: str | None = None) -> Checkpoint:
    return Checkpoint(count, head_hash, dict(active), backup)
