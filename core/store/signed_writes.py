"""The table writes of signed actions: an accepted correction, a resolved conflict, a case mark.

``core.signing`` decides what may be signed and signs it; the rows that the
signed entry accounts for are written here, inside the signing transaction,
so the store stays the one owner of its tables (a case's version, the totals,
the quarantine's status) and signing never touches them itself.
"""

from __future__ import annotations

from core.rules.lifecycle import OPEN

from .queries import STATUS_TOTAL
from .totals import bump_total


class StaleRow(ValueError):
    """The row a signed action was planned against changed before it was applied; nothing is written."""


def apply_resolve(receiver, payload: dict, *, status: str, settled_status: str, accept: bool, operator: str,
                  at: float) -> None:
    """Write a signed resolution: with ``accept``, the newcomer replaces the ledger's version
    (kept in the case history, headcount total moved by the difference); every version it
    covers is settled; the conflict gets ``status`` and the others it covers ``settled_status``."""
    m = receiver.m
    qid, key = payload["quarantine_id"], payload["case_key"]
    led, new = payload["ledger"], payload["newcomer"]
    if accept:
        m.CaseHistory.create(
            case=payload["case_id"], frame_id=led["frame_id"], frame_text=led["frame_text"], site=led["site"],
            need=led["need"], headcount=led["headcount"], pri=led["pri"], replaced_at=at, quarantine_id=qid,
        )
        C = m.Case
        C.update(
            frame_text=new["frame_text"], seq=new["seq"], site=new["site"], need=new["need"],
            headcount=new["headcount"], pri=new["pri"], updated_at=at, version=C.version + 1,
        ).where(C.id == payload["case_id"]).execute()
        bump_total(receiver.db, m, [("headcount", new["headcount"] - led["headcount"])])
    for settled in payload["settles"]:
        m.Settlement.create(case_key=key, frame_text=settled["frame_text"], payload=settled["payload"],
                            quarantine_id=qid)
    Q = m.Quarantine
    Q.update(status=status, resolved_at=at, resolved_by=operator).where(Q.id == qid).execute()
    if payload["also_resolves"]:
        Q.update(status=settled_status, resolved_at=at, resolved_by=operator).where(
            Q.id.in_(payload["also_resolves"])
        ).execute()


def apply_mark(receiver, payload: dict, *, operator: str, reason: str, audit_seq: int, at: float) -> None:
    """Move a case from ``payload["from"]`` to ``payload["to"]`` with its mark row and the
    per-status totals; ``StaleRow`` when the case is no longer where the mark found it."""
    m = receiver.m
    C = m.Case
    frm, to = payload["from"], payload["to"]
    moved = C.update(status=to).where((C.id == payload["case_id"]) & (C.status == frm)).execute()
    if moved != 1:
        raise StaleRow(f"case {payload['frame_id']} is no longer {frm}")
    m.CaseMark.create(case=payload["case_id"], case_key=payload["case_key"], frame_id=payload["frame_id"],
                      from_status=frm, to_status=to, at=at, operator=operator, reason=reason,
                      audit_seq=audit_seq)
    # Open is all cases minus the others, so it has no total of its own.
    bump_total(receiver.db, m, [(STATUS_TOTAL + s, d) for s, d in ((frm, -1), (to, +1)) if s != OPEN])
