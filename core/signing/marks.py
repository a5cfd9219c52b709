"""Marking a case dispatched, served, closed or open again: a signed action (docs/rules.md#carrying-a-case-to-done).

A mark changes where aid goes (a served case leaves the ranking), so it is
signed like a resolution: the case's status, its row in ``case_marks`` and the
signed entry commit in one transaction. A mark never touches dedup (R14): the
witnesses, the settlements and the quarantine stay exactly as they were.

``check_marks`` reconciles the marks with the log: every mark row has its
signed entry and every signed mark its row, with the same fields, and each
case's status is the one its last mark set. ``audit.verify`` runs it once the
chain itself is sound.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from core.rules.frame import FRAME_ID_RE, case_key
from core.rules.lifecycle import OPEN, RANKED, SERVED, LifecycleError, check_move, check_status
from core.store.queries import STATUS_TOTAL

from .actions import Preview, _preview, _sign
from .operators import ActionError

MARK_ACTION = "case.mark"


def _case_ref(case) -> str:
    return f"{case.frame_id} ({case.site} {case.need}, {case.headcount} people, pri {case.pri})"


def find_case(receiver, frame_id: object):
    """The case a frame id names: its own id, or the id of any version of it that the store
    has seen (a re-ranked copy, an accepted correction, a quarantined newcomer)."""
    fid = str(frame_id)
    if not FRAME_ID_RE.fullmatch(fid):
        raise ActionError("a frame id is 1-64 letters, digits, '.', '_', ':' or '-'")
    m = receiver.m
    C = m.Case
    case = C.get_or_none(C.frame_id == fid)
    if case is not None:
        return case
    case = C.get_or_none(C.case_key == case_key(fid))
    if case is not None:
        known = (
            m.SeenFrame.select().where(m.SeenFrame.frame_id == fid).exists()
            or m.Quarantine.select().where(m.Quarantine.frame_id == fid).exists()
            or m.CaseHistory.select().where(m.CaseHistory.frame_id == fid).exists()
        )
        if known:
            return case
    raise ActionError(f"no case with frame id {fid}")


def _plan_mark(receiver, frame_id, status) -> tuple[str, str, dict]:
    try:
        status = check_status(status)
        case = find_case(receiver, frame_id)
        check_move(case.status, status)
    except LifecycleError as exc:
        raise ActionError(str(exc)) from None
    Q = receiver.m.Quarantine
    disputed = [q for (q,) in Q.select(Q.id).where(
        (Q.status == "open") & ((Q.case_key == case.case_key) | (Q.frame_id == case.frame_id))
    ).order_by(Q.id).tuples()]
    payload = {
        "case_id": case.id,
        "case_key": case.case_key,
        "frame_id": case.frame_id,
        "version": case.version,
        "from": case.status,
        "to": status,
        "open_conflicts": disputed,
    }
    return MARK_ACTION, f"case:{case.frame_id}", payload


def _what(receiver, payload: dict) -> list[str]:
    case = receiver.m.Case.get_by_id(payload["case_id"])
    frm, to = payload["from"], payload["to"]
    lines = [f"mark case {_case_ref(case)} {to} (now {frm}, version {payload['version']})"]
    if to in RANKED and frm not in RANKED:
        lines.append("effect: the case comes back into the dispatch ranking")
    elif to not in RANKED and frm in RANKED:
        lines.append("effect: the case leaves the dispatch ranking (ranking --all still lists it)")
    else:
        lines.append("effect: the case keeps its place in the ranking, shown " + to)
    lines.append("dedup is unchanged: re-sent frames stay duplicates, corrections still wait in quarantine")
    if payload["open_conflicts"]:
        lines.append("note: the case is DISPUTED, open conflict "
                     + ", ".join(f"#{i}" for i in payload["open_conflicts"]) + " concerns it")
    return lines


def describe_mark(receiver, frame_id, status, operator: str, reason: str) -> Preview:
    action, target, payload = _plan_mark(receiver, frame_id, status)
    return _preview(receiver, action, target, payload, operator, reason, _what(receiver, payload))


def mark_case(home, receiver, frame_id, status, *, operator: str, passphrase: str | None = None, reason: str,
              now: float | None = None, expected: Preview | None = None, signer=None) -> dict:
    """Move a case to ``status``, signed; a move the lifecycle refuses changes nothing."""

    def apply(payload, entry, at):
        return _apply_mark(receiver, payload, entry, at)

    return _sign(home, receiver, lambda: _plan_mark(receiver, frame_id, status), apply,
                 operator, passphrase, reason, now, expected, signer)


def _bump(receiver, status: str, delta: int) -> None:
    if status == OPEN:
        return  # open is all cases minus the others
    T = receiver.m.Total
    T.insert(name=STATUS_TOTAL + status, value=delta).on_conflict(
        conflict_target=[T.name], update={T.value: T.value + delta}
    ).execute()


def _apply_mark(receiver, payload: dict, entry: dict, at: float) -> dict:
    m = receiver.m
    C = m.Case
    frm, to = payload["from"], payload["to"]
    moved = C.update(status=to).where((C.id == payload["case_id"]) & (C.status == frm)).execute()
    if moved != 1:
        raise ActionError("the case changed since this action was shown; review it again before signing")
    m.CaseMark.create(case=payload["case_id"], case_key=payload["case_key"], frame_id=payload["frame_id"],
                      from_status=frm, to_status=to, at=at, operator=entry["operator"], reason=entry["reason"],
                      audit_seq=entry["seq"])
    _bump(receiver, frm, -1)
    _bump(receiver, to, +1)
    return {"frame_id": payload["frame_id"], "from": frm, "status": to, "served": to == SERVED}


# -- reconciling the marks with the log ---------------------------------------------------
class MarkProblem(NamedTuple):
    seq: int | None  # the audit entry concerned, when there is one
    why: str


def _signed_marks(receiver) -> dict[int, dict]:
    """Every signed mark in the log, by entry number (raw values: the log may be tampered with)."""
    db = receiver.db
    q = db.quote
    sql = (f"SELECT {q[0]}seq{q[1]}, {q[0]}at{q[1]}, {q[0]}operator{q[1]}, {q[0]}reason{q[1]}, "
           f"{q[0]}payload{q[1]} FROM audit_log WHERE {q[0]}action{q[1]} = {db.param}")
    out = {}
    for seq, at, operator, reason, payload in db.execute_sql(sql, (MARK_ACTION,)).fetchall():
        try:
            body = json.loads(payload)
        except (TypeError, ValueError):
            body = {}
        out[seq] = {"at": at, "operator": operator, "reason": reason, "payload": body if isinstance(body, dict) else {}}
    return out


def check_marks(receiver) -> MarkProblem | None:
    """The first way the case marks and case statuses disagree with the signed log, or None.

    Self-contained (reads the tables and the log, nothing else), so a wider
    reconciliation of tables with the log can call it as one of its checks.
    """
    signed = _signed_marks(receiver)
    M = receiver.m.CaseMark
    rows = list(M.select().order_by(M.audit_seq).dicts())
    by_seq = {r["audit_seq"]: r for r in rows}
    for seq in sorted(signed):
        row = by_seq.get(seq)
        if row is None:
            return MarkProblem(seq, f"removed: the case mark signed in entry #{seq} is not in the case marks")
        entry, p = signed[seq], signed[seq]["payload"]
        expected = {"case": p.get("case_id"), "case_key": p.get("case_key"), "frame_id": p.get("frame_id"),
                    "from_status": p.get("from"), "to_status": p.get("to"), "at": entry["at"],
                    "operator": entry["operator"], "reason": entry["reason"]}
        for field, value in expected.items():
            if row[field] != value:
                return MarkProblem(seq, f"edited: case mark #{row['id']} ({field}) differs from what entry #{seq} signed")
    for row in rows:
        if row["audit_seq"] not in signed:
            return MarkProblem(None, f"edited: case mark #{row['id']} has no signed entry")
    last: dict[int, str] = {}
    for row in rows:
        last[row["case"]] = row["to_status"]
    C = receiver.m.Case
    not_open: set[int] = set()
    for case_id, frame_id, status in C.select(C.id, C.frame_id, C.status).where(C.status != OPEN).tuples().iterator():
        not_open.add(case_id)
        if status != last.get(case_id, OPEN):
            return MarkProblem(None, f"edited: case {frame_id} is {status} but its signed marks leave it "
                                     f"{last.get(case_id, OPEN)}")
    for case_id, status in last.items():
        if status != OPEN and case_id not in not_open:
            case = C.get_or_none(C.id == case_id)
            name = case.frame_id if case is not None else f"#{case_id}"
            return MarkProblem(None, f"edited: case {name} is open but its signed marks leave it {status}")
    return None
