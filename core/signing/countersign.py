"""A second pair of eyes: holding an admin's signed action until another admin approves it.

Opt-in per kind of action with ``[signing] countersign`` in ``config.toml``
(``core.config.SigningConfig``). A held action is signed as a request and
nothing applies (``hold``); an approval by another admin signs an entry bound
to the request's hash and applies the action in the same transaction, as the
requester's action at the approval's point of the chain; a rejection closes
it. Both are signed actions (``decisions``); what a held action says and
writes is its own entry's (``SignedAction.what``, ``recheck``, ``apply``).
The log's rules are in ``held``; ``audit verify`` replays them.
"""

from __future__ import annotations

import json
import os
import time
from typing import Mapping

from core.config import SigningConfig, load_signing_config
from core.i18n import N_
from core.rules.text import Said
from core.store.database import write_transaction

from . import audit, held, roles
from .audit_models import audit_models
from .keys import ActionError, Signer, check_name, key_path


def policy(home) -> SigningConfig:
    """The home's ``[signing]`` settings (none without a home: a library caller signs directly)."""
    return SigningConfig() if home is None else load_signing_config(home.config)


def hours_for(home, action: str) -> float | None:
    """How long ``action`` would wait for a second admin, or None when it applies at once."""
    settings = policy(home)
    return settings.countersign_hours if held.KIND_OF.get(action) in settings.countersign else None


def _alone(receiver, operator: str, action: str) -> None:
    """Refuse to hold a request no one could approve: the requester is the only active admin."""
    if roles.other_admin(roles.holders(receiver), operator):
        return
    kind = held.KIND_OF[action]
    if kind == "operator":
        raise ActionError(N_("%(action)s waits for a second admin ([signing] countersign = %(kind)s), but %(operator)s "
                             "is the only active admin, so nobody could approve it; take %(kind)s out of [signing] "
                             "countersign in config.toml until a second admin exists (nothing was signed)"),
                          action=action, kind=kind, operator=operator)
    raise ActionError(N_("%(action)s waits for a second admin ([signing] countersign = %(kind)s), but %(operator)s is "
                         "the only active admin, so nobody could approve it; grant a second operator the admin role "
                         "first (nothing was signed)"), action=action, kind=kind, operator=operator)


def check(home, receiver, operator: str, action: str) -> float | None:
    """Before a passphrase is asked: the hours ``action`` would wait, refused when nobody could approve."""
    hours = hours_for(home, action)
    if hours is not None:
        _alone(receiver, operator, action)
    return hours


def hold(receiver, signer: Signer, action: str, target: str, reason: str, payload: dict, hours: float,
         now: float | None = None) -> dict:
    """Sign ``action`` as a request for a second admin (inside the caller's transaction); nothing applies."""
    with write_transaction(receiver.db):
        _alone(receiver, signer.name, action)
        entry = audit.append(receiver, signer, held.REQUEST, target, reason,
                             held.request_payload(action, target, payload, hours), now=now)
    return {"pending": entry["seq"], "action": action, "target": target, "requested_by": signer.name,
            "expires_at": entry["at"] + hours * held.HOUR, "entry": entry}


# -- the store's view of the held requests -------------------------------------------------
def requests(receiver) -> dict[int, held.Request]:
    """Every request of the stored log and its state, as decided by the log's approvals and rejections."""
    db = receiver.db
    cursor = db.execute_sql(f"SELECT {audit._columns(db)} FROM audit_log WHERE action IN "
                            f"({', '.join([db.param] * len(held.ACTIONS))}) ORDER BY id", held.ACTIONS)
    out: dict[int, held.Request] = {}
    for values in cursor.fetchall():
        e = audit._Row(*values)._asdict()
        try:
            e["payload"] = json.loads(e["payload"])
        except (TypeError, ValueError):
            continue
        if e["action"] == held.REQUEST:
            request = held.read_request(e["seq"], e["target"], e["operator"], e["key"], e["at"], e["prev_hash"],
                                        e["hash"], e["reason"], e["payload"] if isinstance(e["payload"], dict) else None)
            if isinstance(request, held.Request):
                out[request.seq] = request
        elif e["action"] in held.DECISIONS:
            problem, request = held.decision_problem(e["seq"], e["action"], e["target"], e["operator"],
                                                     float(e["at"]), e["payload"], out)
            if problem is None:
                held.decide(request, e["action"], e["seq"], e["operator"])
    return out


def said(request: held.Request, action) -> str:
    """``what`` in the operator's language (``SignedAction.said``), for a preview; the English
    ``what`` where the action has no such words."""
    try:
        return Said(action.said(request.payload)) if action.said is not None else what(request, action)
    except (KeyError, TypeError, ValueError, AttributeError):
        return f"{request.action} {request.target}"


def what(request: held.Request, action) -> str:
    """One line saying what a held request would do: the held action's own words
    (``SignedAction.what``; ``action`` is its entry in the table of signed actions)."""
    try:
        return action.what(request.payload)
    except (KeyError, TypeError, ValueError, AttributeError):
        return f"{request.action} {request.target}"


def as_dict(request: held.Request, now: float, action) -> dict:
    state = request.state
    if state == held.WAITING and request.expired(now):
        state = "expired"
    return {"id": request.seq, "action": request.action, "target": request.target, "what": what(request, action),
            "requested_by": request.operator, "requested_at": request.at, "reason": request.reason,
            "expires_at": request.expires_at, "status": state, "request_hash": request.hash}


def pending(receiver, actions: Mapping, now: float | None = None) -> list[dict]:
    """The requests still waiting for a second admin (expired ones say so), oldest first;
    ``actions`` is the table of signed actions by id, whose words say what each would do."""
    at = time.time() if now is None else float(now)
    return [as_dict(r, at, actions[r.action]) for r in requests(receiver).values() if r.state == held.WAITING]


# -- deciding --------------------------------------------------------------------------------
def _request_id(value: object) -> int:
    try:
        rid = int(str(value).lstrip("#"))
    except (TypeError, ValueError):
        raise ActionError(N_("a request's id is a whole number: the id column of %(command)s"),
                          command="`ussd-console pending`") from None
    if rid < 1:
        raise ActionError(N_("no held request #%(id)s"), id=rid)
    return rid


def _active(receiver, name: str):
    O = audit_models(receiver.db).Operator
    row = O.get_or_none(O.name == check_name(name))
    if row is None:
        raise ActionError(N_("no operator named %(name)s"), name=name)
    if row.retired_at is not None:
        raise ActionError(N_("operator %(name)s is retired and can no longer sign"), name=name)
    return row


def _waiting(receiver, rid: int, at: float, verb: str) -> held.Request:
    request = requests(receiver).get(rid)
    if request is None:
        raise ActionError(N_("no held request #%(id)s: %(command)s lists those that wait"), id=rid,
                          command="`ussd-console pending`")
    if request.state != held.WAITING:
        raise ActionError(N_("request #%(id)s is already %(state)s (entry #%(entry)s by %(by)s)"), id=rid,
                          state=request.state, entry=request.decided_seq, by=request.decided_by)
    if verb == "approve" and request.expired(at):  # an expired one may still be rejected, to close it
        raise ActionError(N_("request #%(id)s expired %(hours)s h after %(operator)s made it; "
                             "it can no longer be approved: sign the action again for a new request"),
                          id=rid, hours=f"{request.hours:g}", operator=request.operator)
    return request


def decide_check(receiver, request_id, operator: str, verb: str, now: float | None = None) -> held.Request:
    """Refuse, before a passphrase is asked, a decision ``operator`` may not sign."""
    rid = _request_id(request_id)
    _active(receiver, operator)
    roles.require(receiver, operator, held.APPROVE if verb == "approve" else held.REJECT)
    request = _waiting(receiver, rid, time.time() if now is None else float(now), verb)
    if verb == "approve":
        if operator == request.operator:
            raise ActionError(N_("%(operator)s made request #%(id)s; a second admin approves it, never its requester"),
                              operator=operator, id=rid)
        if request.action in (roles.OPERATOR_GRANT, roles.OPERATOR_REVOKE) and request.payload.get("name") == operator:
            raise ActionError(N_("request #%(id)s changes %(operator)s's own roles; another admin approves it"),
                              id=rid, operator=operator)
    return request


def refuse_unfit(receiver, request: held.Request, action) -> None:
    """Refuse to approve a held action that no longer fits: its requester retired, the role rules
    broken at the approval's point of the chain, or the store moved on (the action's ``recheck``)."""
    holders, rid = roles.holders(receiver), request.seq
    roles_now = holders.get(request.operator, (frozenset(), False))
    if not roles_now[1]:
        raise ActionError(N_("%(operator)s, who made request #%(id)s, is retired: reject it"), operator=request.operator,
                          id=rid)
    problem = roles.entry_problem(audit.head(receiver).count + 1, request.action, request.operator, roles_now[0],
                                  request.payload, holders)
    if problem:
        raise ActionError(N_("request #%(id)s can no longer be applied (%(problem)s); reject it"), id=rid, problem=problem)
    problem = action.recheck(receiver, request.payload, rid) if action.recheck is not None else None
    if problem:
        raise ActionError(problem)


def set_aside(home, request: held.Request) -> str | None:
    """A rejected ``operator.add`` wrote the new operator's key file when it was requested: it is
    moved aside (``NAME.key.rejected-N``, kept) so the name can be asked for again."""
    if request.action != "operator.add" or home is None:
        return None
    path = key_path(home, request.payload["name"])
    aside = path.with_name(f"{path.name}.rejected-{request.seq}")
    if path.exists() and not aside.exists():
        os.replace(path, aside)
        return str(aside)
    return None
