"""Marking a case dispatched, served, closed or open again: a signed action (docs/rules.md#carrying-a-case-to-done).

A mark changes where aid goes (a served case leaves the ranking), so it is
signed like a resolution: the case's status, its row in ``case_marks`` and the
signed entry commit in one transaction. A mark never touches dedup (R14): the
witnesses, the settlements and the quarantine stay exactly as they were.

``mark_check.check_marks`` reconciles the marks with the log.
"""

from __future__ import annotations

from core.rules.frame import FRAME_ID_RE, case_key
from core.i18n import N_, _, ngettext, number
from core.rules.text import Said, plain
from core.rules.lifecycle import RANKED, SERVED, SHOWN, LifecycleError, check_move, check_status
from core.store.signed_writes import StaleRow, apply_mark

from . import roles
from .keys import ActionError
from .mark_check import MARK_ACTION
from .signed_action import SignedAction

# Each status a mark sets, as a title says it, and what it means: the console's dialog and palette.
STATUS_WORDS = {
    "dispatched": ("dispatched", "a team is on its way"),
    "served": ("served", "aid delivered"),
    "closed": ("closed", "no action needed; say why"),
    "open": ("open again", "back into the ranking"),
}


def _shown(status: str) -> str:
    return _(SHOWN[status]) if status in SHOWN else plain(status)


def _case_ref(case) -> str:
    return ngettext("%(frame_id)s (%(site)s %(need)s, %(n)s person, pri %(pri)s)",
                    "%(frame_id)s (%(site)s %(need)s, %(n)s people, pri %(pri)s)", case.headcount,
                    frame_id=plain(case.frame_id), site=plain(case.site), need=case.need, n=number(case.headcount),
                    pri=case.pri)


def find_case(receiver, frame_id: object):
    """The case a frame id names: its own id, or the id of any version of it that the store
    has seen (a re-ranked copy, an accepted correction, a quarantined newcomer)."""
    fid = str(frame_id)
    if not FRAME_ID_RE.fullmatch(fid):
        raise ActionError(N_("a frame id is 1-64 letters, digits, '.', '_', ':' or '-'"))
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
    raise ActionError(N_("no case with frame id %(frame_id)s"), frame_id=fid)


def _plan(receiver, by, frame_id, status) -> tuple[str, dict]:
    try:
        status = check_status(status)
        case = find_case(receiver, frame_id)
        check_move(case.status, status)
    except LifecycleError as exc:
        raise ActionError(exc.message, **exc.values) from None
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
    return f"case:{case.frame_id}", payload


def _what(receiver, payload: dict) -> list[str]:
    """The preview's words, in the operator's language (the payload keeps the statuses' codes)."""
    case = receiver.m.Case.get_by_id(payload["case_id"])
    frm, to = payload["from"], payload["to"]
    lines = [_("mark case %(case)s %(to)s (now %(from)s, version %(version)s)", case=_case_ref(case),
               to=_(SHOWN[to]), version=payload["version"], **{"from": _(SHOWN.get(frm, frm))})]
    if to in RANKED and frm not in RANKED:
        lines.append(_("effect: the case comes back into the dispatch ranking"))
    elif to not in RANKED and frm in RANKED:
        lines.append(_("effect: the case leaves the dispatch ranking (ranking --all still lists it)"))
    else:
        lines.append(_("effect: the case keeps its place in the ranking, shown %(status)s", status=_(SHOWN[to])))
    lines.append(_("dedup is unchanged: re-sent frames stay duplicates, corrections still wait in quarantine"))
    conflicts = payload["open_conflicts"]
    if conflicts:
        lines.append(ngettext("note: the case is DISPUTED, open conflict %(ids)s concerns it",
                              "note: the case is DISPUTED, open conflicts %(ids)s concern it", len(conflicts),
                              ids=", ".join(f"#{i}" for i in conflicts)))
    return lines


def _apply(receiver, payload: dict, entry: dict, at: float) -> dict:
    """Ask the store to move the case; signing itself writes no table."""
    try:
        apply_mark(receiver, payload, operator=entry["operator"], reason=entry["reason"], audit_seq=entry["seq"],
                   at=at)
    except StaleRow:
        raise ActionError(N_("the case changed since this action was shown; review it again before signing")) from None
    return {"frame_id": payload["frame_id"], "from": payload["from"], "status": payload["to"],
            "served": payload["to"] == SERVED}


MARK = SignedAction(
    MARK_ACTION, roles.DISPATCHER, "Mark a case", "case mark FRAME_ID STATUS",
    summary=lambda done: Said(_("case %(frame_id)s: %(old)s -> %(new)s", frame_id=plain(done["frame_id"]),
                                old=_shown(done["from"]), new=_shown(done["status"]))),
    plan=_plan, apply=_apply, lines=_what,
)
