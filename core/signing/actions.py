"""Operator-signed actions: resolving a conflict (both ways) and changing the retention policy.

Each is a ``SignedAction`` (``signed_action``): the change to the ledger, the
quarantine queue or the policy commits together with its signed audit entry,
or neither does.
"""

from __future__ import annotations

import math

from core.i18n import N_, SOURCE, _, language, ngettext
from core.rules.decide import payload_key
from core.rules.explain import reason_words
from core.rules.frame import Frame, is_rerankable, parse
from core.rules.retention import DAY, RetentionError, check_retention, describe, in_english, period
from core.rules.text import Said, plain
from core.rules.words import resolution_words
from core.store.signed_writes import apply_resolve

from . import roles
from .keys import ActionError
from .signed_action import SignedAction

KEEP_FIRST = "keep_first"
ACCEPT_CORRECTION = "accept_correction"
DECISIONS = (KEEP_FIRST, ACCEPT_CORRECTION)
# Quarantine status after a resolution; "settled" marks other open rows of the
# case that the decision covers (R13: they would arrive as resolved_earlier now).
STATUS = {KEEP_FIRST: "kept_first", ACCEPT_CORRECTION: "accepted_correction"}
SETTLED = "settled"
RETENTION_ACTION = "retention.set"
RETENTION_TARGET = "retention"


def _payload_key(values: dict) -> str:
    """The settlement key of a version described by its fields (one definition: ``payload_key``)."""
    return payload_key((values["site"], values["need"], values["headcount"], values["pri"]))


def _frame_values(text: str) -> dict:
    """Site, need, headcount, pri and pack rank read back from a stored canonical frame."""
    parsed = parse("stored", text)
    if not isinstance(parsed, Frame):
        raise ActionError(N_("a stored frame could not be read back (%(reason)s); the store may be damaged"),
                          reason=parsed.reason)
    return {"seq": parsed.seq, "site": parsed.site, "need": parsed.need,
            "headcount": parsed.headcount, "pri": parsed.pri}


def _decision(decision: object) -> str:
    value = str(decision).replace("-", "_")
    if value not in DECISIONS:
        raise ActionError(N_("a resolution is %(first)s or %(correction)s"), first="keep_first",
                          correction="accept_correction")
    return value


def _quarantine_id(value: object) -> int:
    try:
        qid = int(value)
    except (TypeError, ValueError):
        raise ActionError(N_("a conflict's id is a whole number: the id column of %(command)s"),
                          command="`ussd-console quarantine`") from None
    if qid < 1:
        raise ActionError(N_("no quarantine item #%(id)s"), id=qid)
    return qid


def _plan_resolve(receiver, quarantine_id, decision) -> tuple[str, dict]:
    m = receiver.m
    qid = _quarantine_id(quarantine_id)
    decision = _decision(decision)
    q = m.Quarantine.get_or_none(m.Quarantine.id == qid)
    if q is None:
        raise ActionError(N_("no quarantine item #%(id)s"), id=qid)
    if q.status != "open":
        if not q.resolved_by:
            raise ActionError(N_("quarantine item #%(id)s is already resolved (%(status)s by nobody)"), id=qid,
                              status=q.status)
        raise ActionError(N_("quarantine item #%(id)s is already resolved (%(status)s by %(by)s)"), id=qid,
                          status=q.status, by=q.resolved_by)
    case = m.Case.get_or_none(m.Case.case_key == q.case_key)
    if case is None:
        raise ActionError(N_("quarantine item #%(id)s names a case that is not in the ledger"), id=qid)
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
    return f"quarantine:{qid}", payload


def _plan_retention(receiver, by, days) -> tuple[str, dict]:
    try:
        days = float(days)
    except (TypeError, ValueError):
        raise ActionError(N_("retention is a number of days, such as 30 or 3.5")) from None
    if not math.isfinite(days) or days <= 0:
        raise ActionError(N_("retention is a positive number of days"))
    seconds = int(round(days * DAY))
    try:
        exception = check_retention(seconds, signed=True)
    except RetentionError as exc:
        raise ActionError(exc.message, **exc.values) from None
    current = receiver.retention_seconds()
    if seconds == current:
        raise ActionError(N_("retention is already %(period)s; nothing to sign"), period=period(current))
    payload = {"from_seconds": current, "to_seconds": seconds, "exception": exception}
    return RETENTION_TARGET, payload


def _values(v: dict) -> str:
    return _("site %(site)s, need %(need)s, headcount %(headcount)s, pri %(pri)s", site=v["site"], need=v["need"],
             headcount=v["headcount"], pri=v["pri"])


def _ids(ids: list) -> str:
    return ", ".join(f"#{i}" for i in ids)


def _resolve_lines(receiver, payload: dict) -> list[str]:
    """The preview's words, in the operator's language; the payload they describe is signed as it is."""
    led, new = payload["ledger"], payload["newcomer"]
    about = {"id": payload["quarantine_id"], "reason": reason_words(payload["conflict"])}
    what = [
        _("resolve conflict #%(id)s (%(reason)s): keep first", **about) if payload["decision"] == KEEP_FIRST
        else _("resolve conflict #%(id)s (%(reason)s): accept correction", **about),
        _("ledger now   %(frame_id)s %(frame)s (%(values)s)", frame_id=plain(led["frame_id"]),
          frame=plain(led["frame_text"]), values=_values(led)),
        _("new version  %(frame_id)s %(frame)s (%(values)s)", frame_id=plain(new["frame_id"]),
          frame=plain(new["frame_text"]), values=_values(new)),
    ]
    if payload["decision"] == KEEP_FIRST:
        what.append(_("effect: the new version is dismissed; the ledger stays as it is"))
    else:
        changes = ", ".join(f"{k} {led[k]} -> {new[k]}" for k in ("site", "need", "headcount", "pri", "seq")
                            if led[k] != new[k])
        what.append(_("effect: the ledger takes the new version's values (%(changes)s); the old values go to the "
                      "case history", changes=changes or _("no field differs")))
    if payload["settles"]:
        what.append(_("later arrivals of %(frames)s count as duplicates (an operator already decided them)",
                      frames=", ".join(plain(s["frame_text"]) for s in payload["settles"])))
    if payload["also_resolves"]:
        also = payload["also_resolves"]
        what.append(ngettext("also settles conflict %(ids)s", "also settles conflicts %(ids)s", len(also),
                             ids=_ids(also)))
    return what


def _apply_resolve(receiver, payload: dict, entry: dict, at: float) -> dict:
    """Ask the store to write what the signed entry says; signing itself writes no table."""
    decision = payload["decision"]
    apply_resolve(receiver, payload, status=STATUS[decision], settled_status=SETTLED,
                  accept=decision == ACCEPT_CORRECTION, operator=entry["operator"], at=at)
    return {"quarantine_id": payload["quarantine_id"], "status": STATUS[decision],
            "also_resolved": payload["also_resolves"]}


def _resolved(done: dict) -> str:
    """The line printed after the signature, in the operator's language (``--json`` has the fields)."""
    words = _("conflict #%(id)s: %(resolution)s", id=done["quarantine_id"],
              resolution=resolution_words(done["status"]))
    if done["also_resolved"]:
        words = _("%(words)s; also settled %(ids)s", words=words, ids=", ".join(f"#{i}" for i in done["also_resolved"]))
    return Said(words)


def _resolution(decision: str, title: str, flag: str) -> SignedAction:
    return SignedAction(
        f"resolve.{decision}", roles.RESOLVER, title, f"resolve ID {flag}", summary=_resolved,
        plan=lambda receiver, by, quarantine_id: _plan_resolve(receiver, quarantine_id, decision),
        apply=_apply_resolve, lines=_resolve_lines,
    )


KEEP = _resolution(KEEP_FIRST, "Resolve a conflict: keep the first version", "--keep-first")
ACCEPT = _resolution(ACCEPT_CORRECTION, "Resolve a conflict: accept the correction", "--accept-correction")
RESOLUTIONS = {KEEP_FIRST: KEEP, ACCEPT_CORRECTION: ACCEPT}


def resolution(decision: object) -> SignedAction:
    """The signed action of a decision named keep_first or accept_correction (or with dashes)."""
    return RESOLUTIONS[_decision(decision)]


def _retention_what(p: dict) -> str:
    """A held request's words as ``--json`` keeps them: English, whatever the language."""
    return (f"change retention from {in_english(p.get('from_seconds', 0))} "
            f"to {in_english(p.get('to_seconds', 0))}")


def _retention_recheck(receiver, p: dict, rid: int) -> str | None:
    current = receiver.retention_seconds()
    if current != p["from_seconds"]:
        return (f"retention is {in_english(current)} now, not the {in_english(p['from_seconds'])} request #{rid} "
                "changes; reject it")
    return None


def _retention_lines(receiver, payload: dict) -> list[str]:
    what = [_("change retention from %(old)s to %(new)s", old=describe(payload.get("from_seconds", 0)),
              new=describe(payload.get("to_seconds", 0)))]
    if payload["exception"]:
        what.append(_("this is a signed exception: below 30 days, frame ids are forgotten sooner, so an old"
                      " re-send is caught only by its case"))
    return what


def _apply_retention(receiver, payload: dict, entry: dict, at: float) -> dict:
    policy = receiver.set_retention(payload["to_seconds"], set_by=entry["operator"], reason=entry["reason"],
                                    signed=True, audit_id=entry["seq"], now=at)
    return {"retention": policy}


def _retention_now(done: dict) -> str:
    policy, seconds = done["retention"], done["retention"]["retention_seconds"]
    period = in_english(seconds) if language() == SOURCE else describe(seconds)  # English as it always read
    if policy["is_exception"]:
        return Said(_("retention is now %(period)s (signed exception)", period=period))
    return Said(_("retention is now %(period)s (policy)", period=period))


# Refused below 72 h, an exception below 30 days.
RETENTION = SignedAction(
    RETENTION_ACTION, roles.ADMIN, "Change retention (and sign an exception below 30 days)", "retention set DAYS",
    summary=_retention_now, plan=_plan_retention, apply=_apply_retention, lines=_retention_lines,
    what=_retention_what, said=lambda p: _retention_lines(None, p)[0], recheck=_retention_recheck,
)


def policy_history(receiver, limit: int = 50) -> list[dict]:
    """Retention settings, newest first, with the audit entry that signed each."""
    P = receiver.m.Policy
    return list(P.select().order_by(P.id.desc()).limit(limit).dicts())
