"""Operator-signed actions: resolving a conflict and changing the retention policy.

Each action is one transaction: the change to the ledger, the quarantine queue
or the policy commits together with its signed audit entry, or neither does.
``describe_*`` builds the very fields the action will sign (all but the time,
which is the moment of signing), so a dialog or a prompt can show them first;
passing that preview back as ``expected`` makes the action refuse to sign
anything else if the store moved on in between.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

from core.rules.decide import payload_key
from core.rules.explain import reason_words
from core.rules.frame import Frame, is_rerankable, parse
from core.rules.retention import DAY, RetentionError, check_retention, describe
from core.signing import audit
from core.store.database import write_transaction
from core.store.signed_writes import apply_resolve

from . import countersign, roles
from .keys import ActionError, check_name, short_fingerprint
from .operators import active_operator, load_signer

KEEP_FIRST = "keep_first"
ACCEPT_CORRECTION = "accept_correction"
DECISIONS = (KEEP_FIRST, ACCEPT_CORRECTION)
# Quarantine status after a resolution; "settled" marks other open rows of the
# case that the decision covers (R13: they would arrive as resolved_earlier now).
STATUS = {KEEP_FIRST: "kept_first", ACCEPT_CORRECTION: "accepted_correction"}
SETTLED = "settled"
RETENTION_ACTION = "retention.set"
RETENTION_TARGET = "retention"


class Preview(NamedTuple):
    """What an action will sign: ``fields`` are the signed fields but the time."""

    action: str
    target: str
    operator: str
    fingerprint: str
    reason: str
    payload: dict
    fields: dict
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _payload_key(values: dict) -> str:
    """The settlement key of a version described by its fields (one definition: ``payload_key``)."""
    return payload_key((values["site"], values["need"], values["headcount"], values["pri"]))


def _frame_values(text: str) -> dict:
    """Site, need, headcount, pri and pack rank read back from a stored canonical frame."""
    parsed = parse("stored", text)
    if not isinstance(parsed, Frame):
        raise ActionError(f"a stored frame could not be read back ({parsed.reason}); the store may be damaged")
    return {"seq": parsed.seq, "site": parsed.site, "need": parsed.need,
            "headcount": parsed.headcount, "pri": parsed.pri}


def _decision(decision: object) -> str:
    value = str(decision).replace("-", "_")
    if value not in DECISIONS:
        raise ActionError("a resolution is keep_first or accept_correction")
    return value


def _quarantine_id(value: object) -> int:
    try:
        qid = int(value)
    except (TypeError, ValueError):
        raise ActionError("a conflict's id is a whole number: the id column of `ussd-console quarantine`") from None
    if qid < 1:
        raise ActionError(f"no quarantine item #{qid}")
    return qid


def _plan_resolve(receiver, quarantine_id, decision) -> tuple[str, str, dict]:
    m = receiver.m
    qid = _quarantine_id(quarantine_id)
    decision = _decision(decision)
    q = m.Quarantine.get_or_none(m.Quarantine.id == qid)
    if q is None:
        raise ActionError(f"no quarantine item #{qid}")
    if q.status != "open":
        raise ActionError(f"quarantine item #{qid} is already resolved ({q.status} by {q.resolved_by or 'nobody'})")
    case = m.Case.get_or_none(m.Case.case_key == q.case_key)
    if case is None:
        raise ActionError(f"quarantine item #{qid} names a case that is not in the ledger")
    ledger = {"frame_id": case.frame_id, "frame_text": case.frame_text, "seq": case.seq, "site": case.site,
              "need": case.need, "headcount": case.headcount, "pri": case.pri, "version": case.version}
    newcomer = {"frame_id": q.frame_id, "frame_text": q.frame_text, **_frame_values(q.frame_text)}
    # Every version this conflict was about is settled: the ledger's, the one the
    # conflict was raised against (if a correction has replaced it since), the newcomer's.
    versions = {case.frame_text: ledger, q.frame_text: newcomer}
    if q.first_text not in versions:
        versions[q.first_text] = _frame_values(q.first_text)
    S = m.Settlement
    already = {t: p for t, p in S.select(S.frame_text, S.payload).where(S.case_key == q.case_key).tuples()}
    settles = sorted(t for t in versions if t not in already)
    texts = set(already) | set(versions)
    payloads = set(already.values()) | {_payload_key(v) for v in versions.values()}
    also = []
    Q = m.Quarantine
    for other in Q.select(Q.id, Q.frame_text).where(
        (Q.case_key == q.case_key) & (Q.status == "open") & (Q.id != qid)
    ).order_by(Q.id):
        covered = other.frame_text in texts or (
            is_rerankable(q.case_key) and _payload_key(_frame_values(other.frame_text)) in payloads
        )
        if covered:
            also.append(other.id)
    payload = {
        "quarantine_id": qid,
        "decision": decision,
        "case_key": q.case_key,
        "case_id": case.id,
        "conflict": q.reason,
        "ledger": ledger,
        "newcomer": newcomer,
        "settles": [{"frame_text": t, "payload": _payload_key(versions[t])} for t in settles],
        "also_resolves": also,
    }
    return f"resolve.{decision}", f"quarantine:{qid}", payload


def _plan_retention(receiver, days) -> tuple[str, str, dict]:
    try:
        days = float(days)
    except (TypeError, ValueError):
        raise ActionError("retention is a number of days, such as 30 or 3.5") from None
    if not math.isfinite(days) or days <= 0:
        raise ActionError("retention is a positive number of days")
    seconds = int(round(days * DAY))
    try:
        exception = check_retention(seconds, signed=True)
    except RetentionError as exc:
        raise ActionError(str(exc)) from None
    current = receiver.retention_seconds()
    if seconds == current:
        raise ActionError(f"retention is already {describe(current)}; nothing to sign")
    payload = {"from_seconds": current, "to_seconds": seconds, "exception": exception}
    return RETENTION_ACTION, RETENTION_TARGET, payload


def _values(v: dict) -> str:
    return f"site {v['site']}, need {v['need']}, headcount {v['headcount']}, pri {v['pri']}"


def _lines(action: str, target: str, payload: dict, fields: dict, fingerprint: str,
           what: list[str] | None = None) -> list[str]:
    if what is not None:
        pass  # the action described itself
    elif action == RETENTION_ACTION:
        frm, to = payload["from_seconds"], payload["to_seconds"]
        what = [f"change retention from {describe(frm)} to {describe(to)}"]
        if payload["exception"]:
            what.append("this is a signed exception: below 30 days, frame ids are forgotten sooner, so an old"
                        " re-send is caught only by its case")
    else:
        led, new = payload["ledger"], payload["newcomer"]
        what = [
            f"resolve conflict #{payload['quarantine_id']} ({reason_words(payload['conflict'])}): "
            + ("keep first" if payload["decision"] == KEEP_FIRST else "accept correction"),
            f"ledger now   {led['frame_id']} {led['frame_text']} ({_values(led)})",
            f"new version  {new['frame_id']} {new['frame_text']} ({_values(new)})",
        ]
        if payload["decision"] == KEEP_FIRST:
            what.append("effect: the new version is dismissed; the ledger stays as it is")
        else:
            changes = ", ".join(f"{k} {led[k]} -> {new[k]}" for k in ("site", "need", "headcount", "pri", "seq")
                                if led[k] != new[k])
            what.append(f"effect: the ledger takes the new version's values ({changes or 'no field differs'}); "
                        "the old values go to the case history")
        if payload["settles"]:
            what.append("later arrivals of " + ", ".join(s["frame_text"] for s in payload["settles"])
                        + " count as duplicates (an operator already decided them)")
        if payload["also_resolves"]:
            what.append("also settles conflict " + ", ".join(f"#{i}" for i in payload["also_resolves"]))
    return [
        *what,
        f"target: {target}; action: {action}",
        f"operator: {fields['operator']} (key {short_fingerprint(fingerprint)})",
        f"reason: {fields['reason']}",
        f"audit entry #{fields['seq']} after head {fields['prev_hash'][:16]}; time: the moment you sign",
    ]


def _preview(receiver, action, target, payload, operator, reason, what: list[str] | None = None) -> Preview:
    """``what`` says what the action does, for actions this module does not describe itself."""
    row = active_operator(receiver, operator)
    roles.require(receiver, row.name, action)
    fields = audit.prepare(receiver, action, target, reason, row.name, row.fingerprint, payload)
    fields.pop("at")
    return Preview(action, target, row.name, row.fingerprint, fields["reason"], payload, fields,
                   _lines(action, target, payload, fields, row.fingerprint, what))


def describe_resolve(receiver, quarantine_id, decision, operator: str, reason: str) -> Preview:
    return _preview(receiver, *_plan_resolve(receiver, quarantine_id, decision), operator, reason)


def describe_retention(receiver, days, operator: str, reason: str) -> Preview:
    return _preview(receiver, *_plan_retention(receiver, days), operator, reason)


def sign_action(home, receiver, plan_fn, apply_fn, operator, passphrase, reason, now, expected, signer=None):
    """The common path: check, unlock, then plan, sign and apply in one transaction.

    ``signer`` is a key the operator already unlocked (the console's signing
    session); without it the passphrase unlocks the key for this action only.
    An action ``[signing] countersign`` covers is signed as a request and
    nothing applies: the result is then ``{"pending": ID, ...}`` (``countersign.hold``).
    """
    check_name(operator)
    reason = audit.check_reason(reason)
    action = plan_fn()[0]  # refuse a bad target before asking the key to unlock
    if signer is not None and signer.name != operator:
        raise ActionError(f"the unlocked key is {signer.name}'s, not {operator}'s")
    active_operator(receiver, operator)
    roles.require(receiver, operator, action)  # and a missing role
    hours = countersign.check(home, receiver, operator, action)  # and a request nobody could approve
    if signer is None:
        signer = load_signer(home, receiver, operator, passphrase)
    at = time.time() if now is None else float(now)
    with write_transaction(receiver.db):
        active_operator(receiver, operator)  # not retired since the key was unlocked
        action, target, payload = plan_fn()
        roles.require(receiver, operator, action)  # held at this point of the chain
        if expected is not None:
            fields = audit.prepare(receiver, action, target, reason, signer.name, signer.fingerprint, payload)
            fields.pop("at")
            if fields != expected.fields:
                raise ActionError("the store changed since this action was shown; review it again before signing")
        if hours is not None:
            return countersign.hold(receiver, signer, action, target, reason, payload, hours, now=at)
        entry = audit.append(receiver, signer, action, target, reason, payload, now=at)
        result = apply_fn(payload, entry, entry["at"])  # the signed time, which never goes back
    return {"entry": entry, **result}


def resolve(home, receiver, quarantine_id, decision, *, operator: str, passphrase: str | None = None,
            reason: str, now: float | None = None, expected: Preview | None = None, signer=None) -> dict:
    """Resolve one open conflict, signed; see the module docstring."""

    def apply(payload, entry, at):
        return _apply_resolve(receiver, payload, entry, at)

    return sign_action(home, receiver, lambda: _plan_resolve(receiver, quarantine_id, decision), apply,
                 operator, passphrase, reason, now, expected, signer)


def _apply_resolve(receiver, payload: dict, entry: dict, at: float) -> dict:
    """Ask the store to write what the signed entry says; signing itself writes no table."""
    decision = payload["decision"]
    apply_resolve(receiver, payload, status=STATUS[decision], settled_status=SETTLED,
                  accept=decision == ACCEPT_CORRECTION, operator=entry["operator"], at=at)
    return {"quarantine_id": payload["quarantine_id"], "status": STATUS[decision],
            "also_resolved": payload["also_resolves"]}


def set_retention(home, receiver, days, *, operator: str, passphrase: str | None = None, reason: str,
                  now: float | None = None, expected: Preview | None = None, signer=None) -> dict:
    """Change the retention policy, signed: refused below 72 h, an exception below 30 days."""

    def apply(payload, entry, at):
        policy = receiver.set_retention(payload["to_seconds"], set_by=entry["operator"], reason=entry["reason"],
                                        signed=True, audit_id=entry["seq"], now=at)
        return {"retention": policy}

    return sign_action(home, receiver, lambda: _plan_retention(receiver, days), apply,
                 operator, passphrase, reason, now, expected, signer)


def policy_history(receiver, limit: int = 50) -> list[dict]:
    """Retention settings, newest first, with the audit entry that signed each."""
    P = receiver.m.Policy
    return list(P.select().order_by(P.id.desc()).limit(limit).dicts())
