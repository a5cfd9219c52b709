"""Reconciling the case marks with the signed log (docs/rules.md#carrying-a-case-to-done).

Every mark row has its signed entry and every signed mark its row, with the
same fields, and each case's status is the one its last mark set.
``audit.verify`` runs it once the chain itself is sound. It reads the tables
and the log only, so verifying never loads the signing path (``marks``).
"""

from __future__ import annotations

import json
from typing import NamedTuple

from core.rules.lifecycle import OPEN

MARK_ACTION = "case.mark"


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
