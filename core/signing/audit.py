"""The append-only, signed, hash-chained audit log (docs/rules.md#operators-and-signatures).

Each entry signs one canonical text holding its number, action, target,
reason, operator, key fingerprint, time, payload and the previous entry's
hash; the entry's own hash covers that text and the signature. Verifying
rebuilds the text from the stored columns, so editing any column, removing,
reordering or re-signing an entry shows. The head (last hash and length) is
kept beside the log and shown to operators, so a cut-off tail can be noticed
against a copy written down or exported.
"""

from __future__ import annotations

import hashlib
import json
import time
import unicodedata
from typing import NamedTuple

from core.rules.text import escape_text
from core.store.database import write_transaction

from .audit_models import audit_models
from .operators import ActionError, Signer, verify_signature

GENESIS = "0" * 64
DOMAIN = b"ussd-console audit v1\n"
REASON_MAX = 500
HEAD_PREFIX_MIN = 12


class Head(NamedTuple):
    count: int
    hash: str


class VerifyResult(NamedTuple):
    ok: bool
    count: int  # entries verified (all of them when ok)
    first_bad_seq: int | None
    why: str


def canonical_json(obj) -> str:
    """One spelling per value: sorted keys, no spaces, ASCII only."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def signed_fields(seq: int, action: str, target: str, reason: str, operator: str, key: str,
                  at: float, prev_hash: str, payload: str) -> dict:
    return {
        "v": 1,
        "seq": int(seq),
        "action": action,
        "target": target,
        "reason": reason,
        "operator": operator,
        "key": key,
        "at": float(at),
        "prev_hash": prev_hash,
        "payload": payload,
    }


def signed_text(fields: dict) -> str:
    """Exactly the text a signature covers (after a fixed domain prefix)."""
    return canonical_json(fields)


def message(fields: dict) -> bytes:
    return DOMAIN + signed_text(fields).encode("ascii")


def entry_hash(msg: bytes, signature_hex: str) -> str:
    return hashlib.sha256(msg + b"\n" + str(signature_hex).encode("utf-8", "replace")).hexdigest()


def check_reason(reason: object) -> str:
    """A reason is required, one line of printable text, bounded."""
    if not isinstance(reason, str) or not reason.strip():
        raise ActionError("a reason is required (say why, in a few words)")
    reason = reason.strip()
    if len(reason) > REASON_MAX:
        raise ActionError(f"the reason is {len(reason)} characters; at most {REASON_MAX}")
    for ch in reason:
        if unicodedata.category(ch)[0] == "C" or unicodedata.category(ch) in ("Zl", "Zp"):
            raise ActionError("the reason must be one line of printable text (no control or formatting characters)")
    return reason


def _fields_of(row) -> dict:
    return signed_fields(row.seq, row.action, row.target, row.reason, row.operator, row.key,
                         row.at, row.prev_hash, row.payload)


def head(receiver) -> Head:
    """The chain's length and last hash as recorded beside the log (GENESIS when empty)."""
    H = audit_models(receiver.db).AuditHead
    row = H.get_or_none(H.id == 1)
    return Head(0, GENESIS) if row is None else Head(row.count, row.head_hash)


def head_hash(receiver) -> str:
    return head(receiver).hash


def _check_tail(receiver, current: Head) -> None:
    """Refuse to extend a log whose last entry no longer matches its head."""
    E = audit_models(receiver.db).AuditEntry
    last = E.select().order_by(E.id.desc()).first()
    if current.count == 0 and last is None:
        return
    if last is None or last.seq != current.count or last.hash != current.hash:
        raise ActionError("the audit log does not match its recorded head; run `audit verify` before signing")


def prepare(receiver, action: str, target: str, reason: str, operator: str, key: str,
            payload: dict) -> dict:
    """The fields the next entry would sign, except its time."""
    current = head(receiver)
    return signed_fields(current.count + 1, action, target, check_reason(reason), operator, key,
                         0.0, current.hash, canonical_json(payload))


def append(receiver, signer: Signer, action: str, target: str, reason: str, payload: dict,
           now: float | None = None) -> dict:
    """Sign and append one entry; the caller's transaction makes it commit with the action."""
    a = audit_models(receiver.db)
    reason = check_reason(reason)
    with write_transaction(receiver.db):
        current = head(receiver)
        _check_tail(receiver, current)
        at = time.time() if now is None else float(now)
        fields = signed_fields(current.count + 1, action, target, reason, signer.name,
                               signer.fingerprint, at, current.hash, canonical_json(payload))
        msg = message(fields)
        signature = signer.sign(msg).hex()
        digest = entry_hash(msg, signature)
        a.AuditEntry.create(
            seq=fields["seq"], action=action, target=target, reason=reason, operator=signer.name,
            key=signer.fingerprint, at=at, prev_hash=current.hash, payload=fields["payload"],
            signature=signature, hash=digest,
        )
        a.AuditHead.insert(id=1, count=fields["seq"], head_hash=digest, updated_at=at).on_conflict(
            conflict_target=[a.AuditHead.id],
            update={a.AuditHead.count: fields["seq"], a.AuditHead.head_hash: digest, a.AuditHead.updated_at: at},
        ).execute()
    return {**fields, "signature": signature, "hash": digest}


def entries(receiver, limit: int | None = None, offset: int = 0, newest_first: bool = False) -> list[dict]:
    """The log as stored, in physical order; payload decoded where it is JSON.

    Raw values are read so that a tampered log can still be listed and inspected.
    """
    sql = f"SELECT {_columns(receiver.db)} FROM audit_log ORDER BY id {'DESC' if newest_first else 'ASC'}"
    params: list = []
    if limit is not None:
        sql += " LIMIT ? OFFSET ?".replace("?", receiver.db.param)
        params = [int(limit), int(offset)]
    found = receiver.db.execute_sql(sql, params).fetchall()
    out = []
    for values in found if limit is not None else found[int(offset):]:
        row = dict(zip(_Row._fields, values))
        try:
            row["payload"] = json.loads(row["payload"])
        except (TypeError, ValueError):
            pass
        out.append(row)
    return out


def _shown(value: object, limit: int = 40) -> str:
    """A stored value quoted in a verdict: it may have been tampered with, so it is escaped."""
    return escape_text(value, limit)


class _Row(NamedTuple):
    seq: object
    action: object
    target: object
    reason: object
    operator: object
    key: object
    at: object
    prev_hash: object
    payload: object
    signature: object
    hash: object


def _columns(db) -> str:
    return ", ".join(f"{db.quote[0]}{name}{db.quote[1]}" for name in _Row._fields)


class _Key(NamedTuple):
    name: str
    public_key: str
    retired_at: float | None


def _entry_problem(row, digest: str, msg: bytes, keys: dict[str, _Key]) -> str | None:
    """Why one entry is not what its operator signed, or None."""
    key = keys.get(row.key)
    if key is None:
        return f"unknown key: {_shown(row.key, 16)} is not a registered operator key"
    if not verify_signature(key.public_key, row.signature, msg):
        for other in keys.values():
            if other is not key and verify_signature(other.public_key, row.signature, msg):
                return f"bad signature: signed with {other.name}'s key, not {_shown(row.operator)}'s"
        if digest != row.hash:
            return "edited: the entry's content no longer matches what was signed"
        return f"bad signature: not made by {_shown(row.operator)}'s key"
    if key.name != row.operator:
        return f"unknown key: the key belongs to {key.name}, not {_shown(row.operator)}"
    if digest != row.hash:
        return "edited: the stored hash does not match the entry"
    if key.retired_at is not None and float(row.at) > key.retired_at:
        return f"unknown key: {key.name}'s key was retired before this entry was signed"
    return None


def verify(receiver, expect_head: str | None = None) -> VerifyResult:
    """Check every signature and link of the chain; name the first bad entry and why.

    ``expect_head`` is a head hash (or a prefix of at least 12 hex digits) the
    operator wrote down earlier: it must still be an entry of the log.
    """
    a = audit_models(receiver.db)
    keys = {
        fp: _Key(name, pub, retired)
        for fp, name, pub, retired in a.Operator.select(
            a.Operator.fingerprint, a.Operator.name, a.Operator.public_key, a.Operator.retired_at
        ).tuples()
    }
    # Raw values, not model instances: a tampered column may hold any type, and
    # reading it must end in a verdict, never in a conversion error.
    cursor = receiver.db.execute_sql(f"SELECT {_columns(receiver.db)} FROM audit_log ORDER BY id")
    rows = [_Row(*values) for values in cursor.fetchall()]
    present = {row.seq for row in rows}
    computed: list[str] = []
    for row in rows:
        try:
            msg = message(_fields_of(row))
        except (TypeError, ValueError, OverflowError, UnicodeEncodeError):
            msg = b""
        computed.append(entry_hash(msg, row.signature) if msg else "")
    position_of = {h: i + 1 for i, h in enumerate(computed) if h}
    prev = GENESIS
    for pos, (row, digest) in enumerate(zip(rows, computed), start=1):
        ok_before = pos - 1
        if not digest:
            return VerifyResult(False, ok_before, pos, "edited: the entry's fields cannot be read back")
        # The entry's own signature first: an edited number is an edit, not a gap.
        problem = _entry_problem(row, digest, message(_fields_of(row)), keys)  # readable: digest is set
        if problem:
            return VerifyResult(False, ok_before, pos, problem)
        if row.seq != pos:
            if pos not in present:
                return VerifyResult(False, ok_before, pos, f"removed: entry #{pos} is missing")
            return VerifyResult(False, ok_before, pos,
                                f"reordered: entry #{_shown(row.seq)} stands where #{pos} belongs")
        if row.prev_hash != prev:
            elsewhere = position_of.get(row.prev_hash)
            if elsewhere is not None and elsewhere != pos - 1:
                return VerifyResult(False, ok_before, pos,
                                    f"reordered: entry #{pos} was signed after #{elsewhere}, not #{pos - 1}")
            if pos == 1:
                return VerifyResult(False, 0, 1, "edited: the first entry does not start the chain")
            return VerifyResult(False, pos - 2, pos - 1,
                                f"edited: entry #{pos - 1} was changed after entry #{pos} recorded its hash")
        prev = digest
    count = len(rows)
    recorded = head(receiver)
    if recorded.count > count:
        return VerifyResult(False, count, count + 1,
                            f"removed: entry #{count + 1} is missing (the log head records {recorded.count} entries)")
    if recorded.count < count:
        return VerifyResult(False, recorded.count, recorded.count + 1,
                            f"edited: the log head records {recorded.count} entries but the log holds {count}")
    if recorded.hash != prev:
        return VerifyResult(False, max(count - 1, 0), count or None,
                            "edited: the last entry does not match the recorded head hash")
    if expect_head is not None:
        wanted = expect_head.strip().lower()
        if len(wanted) < HEAD_PREFIX_MIN or any(c not in "0123456789abcdef" for c in wanted):
            raise ActionError(f"a head hash is at least {HEAD_PREFIX_MIN} hex digits")
        if wanted != GENESIS[: len(wanted)] and not any(h.startswith(wanted) for h in computed):
            return VerifyResult(False, count, count + 1,
                                f"removed: head {wanted[:16]} is no longer in the log (entries were cut off or rewritten)")
    from .marks import check_marks  # reconciles the case marks with the log; imports this module

    problem = check_marks(receiver)
    if problem is not None:
        return VerifyResult(False, count, problem.seq, problem.why)
    return VerifyResult(True, count, None, f"{count} entries verified")
