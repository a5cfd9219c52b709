"""A case's history as plain data (``case show``, the console's history screen).

Its versions (the first applied one, then each accepted correction with who
signed it and why), its status marks, the conflicts still open about it and the ones an
operator decided (which version stayed, who signed, when, the audit entry): a resolved
conflict stays on its case.
Read only; the reasons come from the signed entries themselves.
"""

from __future__ import annotations

import json

from core.i18n import N_

from .audit_models import audit_models
from .marks import find_case
from .keys import ActionError

VALUE_FIELDS = ("frame_text", "site", "need", "headcount", "pri")


def _values(row: dict) -> dict:
    return {k: row[k] for k in VALUE_FIELDS}


def _correction_entries(receiver, quarantine_ids: list[int]) -> dict[int, dict]:
    """The signed accept-correction entry of each quarantine id."""
    if not quarantine_ids:
        return {}
    E = audit_models(receiver.db).AuditEntry
    targets = [f"quarantine:{q}" for q in quarantine_ids]
    out = {}
    for seq, target, operator, reason, at in E.select(E.seq, E.target, E.operator, E.reason, E.at).where(
        (E.action == "resolve.accept_correction") & E.target.in_(targets)
    ).tuples():
        out[int(target.split(":", 1)[1])] = {"audit_seq": seq, "by": operator, "reason": reason, "signed_at": at}
    return out


RESOLVE_ACTIONS = ("resolve.keep_first", "resolve.accept_correction")


def _resolve_entries(receiver, quarantine_ids: list[int]) -> dict[int, dict]:
    """The signed resolve entry that decided each quarantine id: its own, or for a conflict settled
    with another one's decision, that one's (its payload's ``also_resolves`` names it)."""
    if not quarantine_ids:
        return {}
    E = audit_models(receiver.db).AuditEntry
    out: dict[int, dict] = {}
    rows = E.select(E.seq, E.action, E.target, E.operator, E.reason, E.at, E.payload).where(
        E.action.in_(RESOLVE_ACTIONS) & E.target.in_([f"quarantine:{q}" for q in quarantine_ids])
    ).order_by(E.seq).tuples()
    for seq, action, target, operator, reason, at, payload in rows:
        try:
            body = json.loads(payload)
        except (TypeError, ValueError):
            body = {}
        decided = int(target.split(":", 1)[1])
        keep_first = action == "resolve.keep_first"
        kept = (body.get("ledger") if keep_first else body.get("newcomer")) or {}
        entry = {"audit_seq": seq, "decision": action.split(".", 1)[1], "by": operator, "audit_reason": reason,
                 "signed_at": at, "kept_text": kept.get("frame_text"), "decided_with": decided}
        out[decided] = entry
        for other in body.get("also_resolves") or ():
            out.setdefault(int(other), entry)
    return out


def _resolved_conflicts(receiver, case) -> list[dict]:
    """The case's conflicts an operator decided: which version stayed, who signed, when, the entry."""
    Q = receiver.m.Quarantine
    rows = list(Q.select().where(
        (Q.status != "open") & ((Q.case_key == case.case_key) | (Q.frame_id == case.frame_id))
    ).order_by(Q.id).dicts())
    entries = _resolve_entries(receiver, [q["id"] for q in rows])
    out = []
    for q in rows:
        signed = entries.get(q["id"], {})
        fallback = {"kept_first": q["first_text"], "accepted_correction": q["frame_text"]}.get(q["status"])
        out.append({
            "id": q["id"], "frame_id": q["frame_id"], "frame_text": q["frame_text"], "first_text": q["first_text"],
            "reason": q["reason"], "status": q["status"], "kept_text": signed.get("kept_text") or fallback,
            "by": signed.get("by", q["resolved_by"]), "at": q["resolved_at"], "audit_seq": signed.get("audit_seq"),
            "audit_reason": signed.get("audit_reason"), "decided_with": signed.get("decided_with"),
        })
    return out


def case_story(receiver, frame_id: str | None = None, case_id: int | None = None,
               case_key: str | None = None) -> dict:
    """Everything about one case, named by any of its frame ids, its id or its case key."""
    m = receiver.m
    C = m.Case
    if case_id is not None:
        case = C.get_or_none(C.id == case_id)
    elif case_key is not None:
        case = C.get_or_none(C.case_key == case_key)
    else:
        case = find_case(receiver, frame_id)
    if case is None:
        raise ActionError(N_("no such case in the ledger"))
    current = C.select().where(C.id == case.id).dicts().get()
    receiver.mark_disputed([current])
    H, Q, M = m.CaseHistory, m.Quarantine, m.CaseMark
    history = list(H.select().where(H.case == case.id).order_by(H.id).dicts())
    corrections = {q["id"]: q for q in Q.select().where(
        Q.id.in_([h["quarantine_id"] for h in history if h["quarantine_id"] is not None] or [0])
    ).dicts()}
    entries = _correction_entries(receiver, list(corrections))
    first = history[0] if history else current
    versions = [{"version": 1, "frame_id": first["frame_id"], **_values(first), "at": current["first_seen"],
                 "how": "applied", "path": current["source"]}]
    for i, h in enumerate(history):
        after = history[i + 1] if i + 1 < len(history) else current
        q = corrections.get(h["quarantine_id"], {})
        signed = entries.get(h["quarantine_id"], {})
        versions.append({
            "version": i + 2, "frame_id": q.get("frame_id", after["frame_id"]), **_values(after),
            "at": h["replaced_at"], "how": "accepted correction", "quarantine_id": h["quarantine_id"],
            "by": signed.get("by", q.get("resolved_by")), "reason": signed.get("reason"),
            "audit_seq": signed.get("audit_seq"),
        })
    marks = [
        {"at": r["at"], "from": r["from_status"], "to": r["to_status"], "by": r["operator"],
         "reason": r["reason"], "audit_seq": r["audit_seq"]}
        for r in M.select().where(M.case == case.id).order_by(M.audit_seq).dicts()
    ]
    conflicts = list(Q.select().where(
        (Q.status == "open") & ((Q.case_key == case.case_key) | (Q.frame_id == case.frame_id))
    ).order_by(Q.id).dicts())
    return {"case": current, "versions": versions, "marks": marks, "open_conflicts": conflicts,
            "resolved_conflicts": _resolved_conflicts(receiver, case)}
