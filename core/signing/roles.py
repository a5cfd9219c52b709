"""Who may sign what: the roles an operator holds, as the signed log records them (docs/roles.md).

Roles live only in the audit chain: ``operator.add`` names the new operator's
roles, ``operator.grant`` and ``operator.revoke`` change them. An operator added
by an entry without a ``roles`` field (a home from before roles), or listed by
the adoption of a home from before signed operator changes, holds every role;
so old entries are never rewritten and old checkpoints still hold.

The same rules run twice: when signing (``require``, from the store's log
without checking signatures, which is verify's work) and when ``audit verify``
replays the chain (``registry.apply`` calls ``entry_problem``).
"""

from __future__ import annotations

import json

from core.i18n import MarkedError, N_
from core.rules.text import escape_text, worded

ADMIN = "admin"
RESOLVER = "resolver"
DISPATCHER = "dispatcher"
ROLES = (ADMIN, RESOLVER, DISPATCHER)
EVERY = frozenset(ROLES)

OPERATOR_GRANT = "operator.grant"
OPERATOR_REVOKE = "operator.revoke"

# The role each signed action needs, for verify, which replays the log without loading the
# modules that sign (they import this one). A copy of the table of signed actions
# (``console.signed_actions``); tests/test_signed_table.py fails when the two disagree.
NEEDS = {
    "resolve.keep_first": RESOLVER,
    "resolve.accept_correction": RESOLVER,
    "case.mark": DISPATCHER,
    "retention.set": ADMIN,
    "gateway.add": ADMIN,
    "gateway.retire": ADMIN,
    "operator.add": ADMIN,
    "operator.retire": ADMIN,
    "operator.adopt": ADMIN,
    OPERATOR_GRANT: ADMIN,
    OPERATOR_REVOKE: ADMIN,
    "countersign.approve": ADMIN,  # a request holds its action and needs that action's role
    "countersign.reject": ADMIN,
    "backup.key": ADMIN,  # the key that proves a backup is this home's
    "alerts.resume": ADMIN,  # alert targets paused since a restore deliver again
}

# What each role lets an operator sign, for the docs, the help screen and refusals.
WHAT = {
    ADMIN: N_("operators and roles, gateways, retention and its exceptions"),
    RESOLVER: N_("resolving conflicts"),
    DISPATCHER: N_("case marks (dispatched, served, closed, open)"),
}


class RoleError(MarkedError, ValueError):
    """A role name that is not one of ``ROLES``."""


def needed(action: str) -> str | None:
    """The role an action needs, or None for an action no role governs."""
    if action in NEEDS:
        return NEEDS[action]
    if isinstance(action, str) and action.startswith("resolve."):  # a resolution the table does not know
        return RESOLVER
    return None


def check_role(value: object) -> str:
    role = str(value).strip().lower()
    if role not in ROLES:
        raise RoleError(N_("no role %(given)s: a role is one of %(roles)s"), given=repr(str(value)[:20]),
                        roles=", ".join(ROLES))
    return role


def check_roles(values) -> list[str]:
    """A non-empty list of known roles, sorted, each once."""
    roles = sorted({check_role(v) for v in values})
    if not roles:
        raise RoleError(N_("an operator holds at least one role: %(roles)s"), roles=", ".join(ROLES))
    return roles


def payload_roles(payload: dict) -> frozenset | None:
    """The roles an ``operator.add`` payload grants: every role when it has no ``roles`` field
    (added before roles), None when the field is there but not a list of known roles."""
    if "roles" not in payload:
        return EVERY
    listed = payload["roles"]
    if not isinstance(listed, list) or not listed or not all(isinstance(r, str) and r in ROLES for r in listed):
        return None
    return frozenset(listed)


REFUSAL = N_("%(operator)s does not hold the %(role)s role, which %(action)s needs (only an admin grants it)")


def refusal(operator: str, action: str, role: str) -> str:
    return REFUSAL % {"operator": operator, "role": role, "action": action}


def entry_problem(pos: int, action: str, signer: str, signer_roles, payload: dict | None,
                  holders: dict[str, tuple[frozenset, bool]]) -> str | None:
    """Why one entry breaks the role rules at its point of the chain, or None.

    ``holders`` is every operator the chain registered so far: name ->
    (roles, active). ``signer_roles`` is None for the self-signed first operator.
    """
    role = needed(action)
    # Values from the log (an action, a name) may have been tampered with: escaped before they go in.
    shown_action, shown_signer = escape_text(action, 40), escape_text(signer, 40)
    if signer_roles is not None and role is not None and role not in signer_roles:
        return worded(N_("lacks role: entry #%(pos)s (%(action)s) is signed by %(signer)s, who did not hold the "
                         "%(role)s role at that point"), pos=pos, action=shown_action, signer=shown_signer, role=role)
    if action not in (OPERATOR_GRANT, OPERATOR_REVOKE, "operator.retire") or payload is None:
        return None
    name = payload.get("name")
    shown_name = escape_text(name, 40)
    if action == "operator.retire":
        roles, active = holders.get(name, (frozenset(), False))
        if ADMIN in roles and active and not other_admin(holders, name):
            return worded(N_("last admin: entry #%(pos)s retires %(name)s, the last active admin"), pos=pos,
                          name=shown_name)
        return None
    who = payload.get("role")
    if who not in ROLES:
        return worded(N_("malformed: entry #%(pos)s (%(action)s) names no known role"), pos=pos, action=shown_action)
    if name == signer:
        return worded(N_("self-grant: entry #%(pos)s (%(action)s) changes the roles of its own signer, %(signer)s"),
                      pos=pos, action=shown_action, signer=shown_signer)
    if name not in holders or not holders[name][1]:
        return worded(N_("unknown operator: entry #%(pos)s (%(action)s) names %(name)s, not an active operator at "
                         "that point"), pos=pos, action=shown_action, name=shown_name)
    roles = holders[name][0]
    if action == OPERATOR_GRANT and who in roles:
        return worded(N_("malformed: entry #%(pos)s grants %(name)s the %(role)s role, already held"), pos=pos,
                      name=shown_name, role=who)
    if action == OPERATOR_REVOKE:
        if who not in roles:
            return worded(N_("malformed: entry #%(pos)s revokes the %(role)s role from %(name)s, who does not hold it"),
                          pos=pos, role=who, name=shown_name)
        if who == ADMIN and not other_admin(holders, name):
            return worded(N_("last admin: entry #%(pos)s revokes the admin role from %(name)s, the last active admin"),
                          pos=pos, name=shown_name)
    return None


def other_admin(holders, name: str) -> bool:
    return any(ADMIN in roles and active for other, (roles, active) in holders.items() if other != name)


def changed(action: str, payload: dict, roles: frozenset) -> frozenset:
    """An operator's roles after a grant or revoke entry."""
    if action == OPERATOR_GRANT:
        return roles | {payload["role"]}
    return roles - {payload["role"]}


# -- the store's view, for signing ---------------------------------------------------
_OPERATOR_ACTIONS = ("operator.add", "operator.adopt", "operator.retire", OPERATOR_GRANT, OPERATOR_REVOKE,
                     "countersign.request", "countersign.approve")


def holders(receiver) -> dict[str, tuple[frozenset, bool]]:
    """name -> (roles, active) as the stored log's operator entries build it, in order.

    An operator in the table but not in the log (a home whose operators were
    never adopted) holds every role, as it did before roles.
    """
    from .audit_models import audit_models

    db = receiver.db
    found = db.execute_sql(
        f"SELECT seq, action, payload FROM audit_log WHERE action IN ({', '.join([db.param] * len(_OPERATOR_ACTIONS))})"
        " ORDER BY id", _OPERATOR_ACTIONS).fetchall()
    out: dict[str, tuple[frozenset, bool]] = {}
    held: dict[object, tuple[str, dict]] = {}  # held operator requests: seq -> (action, payload)
    for seq, action, raw in found:
        try:
            payload = json.loads(raw)
        except (TypeError, ValueError):
            continue
        if not isinstance(payload, dict):
            continue
        if action == "countersign.request":
            if payload.get("action") in _OPERATOR_ACTIONS and isinstance(payload.get("payload"), dict):
                held[seq] = (payload["action"], payload["payload"])
            continue
        if action == "countersign.approve":  # the held action takes effect here
            if payload.get("request") not in held:
                continue
            action, payload = held.pop(payload["request"])
        if action == "operator.adopt":
            for op in payload.get("operators") or []:
                if isinstance(op, dict) and isinstance(op.get("name"), str):
                    out[op["name"]] = (EVERY, op.get("retired_at") is None)
            continue
        name = payload.get("name")
        if not isinstance(name, str):
            continue
        if action == "operator.add":
            out[name] = (payload_roles(payload) or frozenset(), True)
        elif name in out and action == "operator.retire":
            out[name] = (out[name][0], False)
        elif name in out and payload.get("role") in ROLES:
            out[name] = (changed(action, payload, out[name][0]), out[name][1])
    O = audit_models(db).Operator
    for name, retired_at in O.select(O.name, O.retired_at).tuples():
        out.setdefault(name, (EVERY, retired_at is None))
    return out


def roles_of(receiver, name: str) -> list[str]:
    return sorted(holders(receiver).get(name, (frozenset(), False))[0])


def require(receiver, operator: str, action: str) -> None:
    """Refuse, in one line naming the role, an action the operator's roles do not allow now."""
    from .keys import ActionError

    role = needed(action)
    if role is None:
        return
    roles = holders(receiver).get(operator, (frozenset(), False))[0]
    if role not in roles:
        raise ActionError(REFUSAL, operator=operator, role=role, action=action)
