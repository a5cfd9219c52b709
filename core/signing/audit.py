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

from core.i18n import N_, ngettext, number
from core.rules.text import Twofold, english_ngettext, escape_text, worded
from core.store.database import write_transaction

from . import backup_key, held
from . import registry as registry_
from .audit_models import audit_models
from .keys import ActionError, Signer, verify_signature

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
    rows: tuple = ()  # each row of the tables that differs from the log, named (see core.reconcile)


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
        raise ActionError(N_("a reason is required (say why, in a few words)"))
    reason = reason.strip()
    if len(reason) > REASON_MAX:
        raise ActionError(N_("the reason is %(n)s characters; at most %(max)s"), n=len(reason), max=REASON_MAX)
    for ch in reason:
        if unicodedata.category(ch)[0] == "C" or unicodedata.category(ch) in ("Zl", "Zp"):
            raise ActionError(N_("the reason must be one line of printable text (no control or formatting characters)"))
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


def _check_tail(receiver, current: Head) -> float:
    """Refuse to extend a log whose last entry no longer matches its head; return that entry's time."""
    E = audit_models(receiver.db).AuditEntry
    last = E.select().order_by(E.id.desc()).first()
    if current.count == 0 and last is None:
        return float("-inf")
    if last is None or last.seq != current.count or last.hash != current.hash:
        raise ActionError(N_("the audit log does not match its recorded head; run %(command)s before signing"),
                          command="`audit verify`")
    return last.at


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
        last_at = _check_tail(receiver, current)
        # Never dated before the entry it follows (verify calls that backdated): a clock
        # stepped back signs at the previous entry's time instead.
        at = max(time.time() if now is None else float(now), last_at)
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


def _entry_problem(row, digest: str, msg: bytes, registry: registry_.Registry, pos: int,
                   later: dict[str, str]) -> str | None:
    """Why one entry is not what an operator registered at that point of the log signed, or None."""
    key = registry.by_fp.get(row.key)
    if key is None:
        own = registry_.self_registration(row, registry)
        if own is None:
            if row.key in later:
                return worded(N_("unknown key: %(name)s was not an operator yet when entry #%(pos)s was signed"),
                              name=_shown(later[row.key]), pos=pos)
            if registry.adoption_seq is None:
                return worded(N_("unknown key: %(key)s is not a key the log registered (operators from before "
                                 "signed operator changes must be adopted once: %(command)s)"),
                              key=_shown(row.key, 16), command="`ussd-console operator adopt`")
            return worded(N_("unknown key: %(key)s is not a key the log registered"), key=_shown(row.key, 16))
        key = registry_.Key(str(row.operator), own, str(row.key), pos)
    if not verify_signature(key.public_key, row.signature, msg):
        for other in registry.by_fp.values():
            if other is not key and verify_signature(other.public_key, row.signature, msg):
                return worded(N_("bad signature: signed with %(other)s's key, not %(operator)s's"),
                              other=_shown(other.name), operator=_shown(row.operator))
        if digest != row.hash:
            return worded(N_("edited: the entry's content no longer matches what was signed"))
        return worded(N_("bad signature: not made by %(operator)s's key"), operator=_shown(row.operator))
    if key.name != row.operator:
        return worded(N_("unknown key: the key belongs to %(name)s, not %(operator)s"), name=_shown(key.name),
                      operator=_shown(row.operator))
    if digest != row.hash:
        return worded(N_("edited: the stored hash does not match the entry"))
    if key.retired_seq is not None:
        return worded(N_("retired: %(name)s was retired by entry #%(seq)s and signed this entry after that"),
                      name=_shown(key.name), seq=key.retired_seq)
    if key.legacy_retired_at is not None and (float(row.at) > key.legacy_retired_at or pos > (registry.adoption_seq or 0)):
        return worded(N_("retired: %(name)s's key was retired before this entry was signed"), name=_shown(key.name))
    return None


class _Walk(NamedTuple):
    rows: list
    computed: list[str]
    result: VerifyResult | None  # the first bad entry, or None when the chain holds
    registry: registry_.Registry
    active_at: dict[str, str] | None  # active operators after entry ``at_count``


def _walk(receiver, at_count: int | None = None) -> _Walk:
    """Check every signature and link, in order, against the keys the log registered so far."""
    # Raw values, not model instances: a tampered column may hold any type, and
    # reading it must end in a verdict, never in a conversion error.
    cursor = receiver.db.execute_sql(f"SELECT {_columns(receiver.db)} FROM audit_log ORDER BY id")
    rows = [_Row(*values) for values in cursor.fetchall()]
    registry = registry_.seed(rows)
    later = registry_.registered_later(rows)
    active_at = dict(registry.active()) if at_count == 0 else None
    present = {row.seq for row in rows}
    computed: list[str] = []
    for row in rows:
        try:
            msg = message(_fields_of(row))
        except (TypeError, ValueError, OverflowError, UnicodeEncodeError):
            msg = b""
        computed.append(entry_hash(msg, row.signature) if msg else "")
    position_of = {h: i + 1 for i, h in enumerate(computed) if h}

    def bad(count: int, seq: int, why: str) -> _Walk:
        return _Walk(rows, computed, VerifyResult(False, count, seq, why), registry, active_at)

    prev = GENESIS
    prev_at: float | None = None
    for pos, (row, digest) in enumerate(zip(rows, computed), start=1):
        ok_before = pos - 1
        if not digest:
            return bad(ok_before, pos, worded(N_("edited: the entry's fields cannot be read back")))

        def misplaced() -> _Walk | None:
            if row.seq != pos:
                if pos not in present:
                    return bad(ok_before, pos, worded(N_("removed: entry #%(pos)s is missing"), pos=pos))
                return bad(ok_before, pos, worded(N_("reordered: entry #%(seq)s stands where #%(pos)s belongs"),
                                                  seq=_shown(row.seq), pos=pos))
            if row.prev_hash != prev:
                elsewhere = position_of.get(row.prev_hash)
                if elsewhere is not None and elsewhere != pos - 1:
                    return bad(ok_before, pos, worded(N_("reordered: entry #%(pos)s was signed after #%(after)s, "
                                                         "not #%(before)s"), pos=pos, after=elsewhere, before=pos - 1))
                if pos == 1:
                    return bad(0, 1, worded(N_("edited: the first entry does not start the chain")))
                return bad(pos - 2, pos - 1, worded(N_("edited: entry #%(changed)s was changed after entry #%(pos)s "
                                                       "recorded its hash"), changed=pos - 1, pos=pos))
            return None

        # The entry's own signature first: an edited number is an edit, not a gap. A key the
        # log has not registered (yet) is the mark of an entry moved up or of its registration
        # cut out: say where the chain broke.
        problem = _entry_problem(row, digest, message(_fields_of(row)), registry, pos, later)
        if problem:
            return (row.key not in registry.by_fp and misplaced()) or bad(ok_before, pos, problem)
        moved = misplaced()
        if moved is not None:
            return moved
        if prev_at is not None and float(row.at) < prev_at:
            return bad(ok_before, pos, worded(N_("backdated: entry #%(pos)s is dated %(seconds)s s before entry "
                                                 "#%(before)s, which it follows"),
                                              pos=pos, seconds=f"{prev_at - float(row.at):.0f}", before=pos - 1))
        problem = registry_.apply(row, pos, registry)
        if problem:
            return bad(ok_before, pos, problem)
        prev, prev_at = digest, float(row.at)
        if pos == at_count:
            active_at = dict(registry.active())
    return _Walk(rows, computed, None, registry, active_at)


def decoded(rows) -> list[dict]:
    """Verified rows as plain entries for reconciling: payload decoded, time a float."""
    out = []
    for pos, row in enumerate(rows, start=1):
        try:
            payload = json.loads(row.payload)
        except (TypeError, ValueError):
            payload = None
        out.append({"seq": pos, "action": row.action, "target": row.target, "reason": row.reason,
                    "operator": row.operator, "key": row.key, "at": float(row.at), "payload": payload})
    return out


def verify(receiver, expect_head: str | None = None, checkpoint=None) -> VerifyResult:
    """Check every signature and link of the chain, then reconcile the tables with it.

    Names the first bad entry and why; or, when the chain holds, every row of
    the signed state that no entry accounts for (``rows``). ``expect_head`` is a
    head hash (or a prefix of at least 12 hex digits) the operator wrote down
    earlier: it must still be an entry of the log. ``checkpoint`` (a
    ``core.checkpoint.Checkpoint``) must still be extended by the log: same
    entry at its count, same keys for its operators.
    """
    from . import checkpoint as checkpoint_
    from .reconcile import reconcile

    wanted = None
    if expect_head is not None:
        wanted = expect_head.strip().lower()
        if len(wanted) < HEAD_PREFIX_MIN or any(c not in "0123456789abcdef" for c in wanted):
            raise ActionError(N_("a head hash is at least %(n)s hex digits"), n=HEAD_PREFIX_MIN)
    walk = _walk(receiver, at_count=None if checkpoint is None else checkpoint.count)
    if walk.result is not None:
        return walk.result
    computed, prev = walk.computed, (walk.computed[-1] if walk.computed else GENESIS)
    count = len(walk.rows)
    recorded = head(receiver)
    if recorded.count > count:
        return VerifyResult(False, count, count + 1,
                            worded(N_("removed: entry #%(pos)s is missing (the log head records %(recorded)s "
                                      "entries)"), pos=count + 1, recorded=recorded.count))
    if recorded.count < count:
        return VerifyResult(False, recorded.count, recorded.count + 1,
                            worded(N_("edited: the log head records %(recorded)s entries but the log holds %(count)s"),
                                   recorded=recorded.count, count=count))
    if recorded.hash != prev:
        return VerifyResult(False, max(count - 1, 0), count or None,
                            worded(N_("edited: the last entry does not match the recorded head hash")))
    if wanted is not None and wanted != GENESIS[: len(wanted)] and not any(h.startswith(wanted) for h in computed):
        near = checkpoint_.near_miss(wanted, computed)
        if near is not None:
            raise ActionError(N_("no entry has head %(wanted)s, but entry #%(near)s has %(head)s: "
                                 "check the head you typed against what you wrote down"),
                              wanted=wanted[:16], near=near, head=computed[near - 1][:16])
        return VerifyResult(False, count, count + 1,
                            worded(N_("removed: head %(head)s is no longer in the log (entries were cut off or "
                                      "rewritten)"), head=wanted[:16]))
    if checkpoint is not None:
        problem = checkpoint_.problem(checkpoint, computed, walk.active_at,
                                      backup_key.in_force(walk.rows[:checkpoint.count]))
        if problem:
            seq = min(checkpoint.count, count + 1)
            return VerifyResult(False, max(seq - 1, 0), seq, problem)
    differences = tuple(reconcile(receiver, held.effects(decoded(walk.rows))))
    if differences:
        return VerifyResult(False, count, None, _in_rows(len(differences)), differences)
    return VerifyResult(True, count, None, f"{count} entries verified")


def _in_rows(n: int) -> Twofold:
    """How many rows the tables differ from the signed log in (the count as English writes it in
    the data, as the language writes numbers where it is said)."""
    def say(ngettext=ngettext, shown=number) -> str:  # English (``english_ngettext``, ``str``) or the language
        return ngettext("the tables differ from the signed log in %(n)s row",
                        "the tables differ from the signed log in %(n)s rows", n, n=shown(n))

    return Twofold(say(english_ngettext, str), say)


def make_checkpoint(receiver):
    """``(verdict, checkpoint)``: a checkpoint of the log as it stands, only when it verifies."""
    from . import checkpoint as checkpoint_

    result = verify(receiver)
    if not result.ok:
        return result, None
    walk = _walk(receiver)
    last = walk.computed[-1] if walk.computed else GENESIS
    return result, checkpoint_.of(len(walk.rows), last, walk.registry.active(), backup_key.in_force(walk.rows))
