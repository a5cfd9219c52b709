"""Retiring an operator, granting and revoking a role, adopting the operators of an old home:
signed actions (``SignedAction``), each an entry of the audit chain.

Adding an operator is ``operator_add``: the new key signs its proof inside the entry.
"""

from __future__ import annotations

import json

from core.i18n import N_, _, ngettext
from core.rules.text import Said

from . import roles
from .audit_models import audit_models
from .keys import ActionError, check_name, short_fingerprint
from .operators import OLD_HOME, active_operator, adoption_list, operator_info, signed_operator_entries
from .registry import OPERATOR_ADOPT, OPERATOR_RETIRE
from .signed_action import SignedAction



def _keep_an_admin(receiver, name: str, what: str) -> None:
    held = roles.holders(receiver)
    if roles.ADMIN in held.get(name, (frozenset(), False))[0] and not roles.other_admin(held, name):
        if what == "retire":
            raise ActionError(N_("%(name)s is the last admin; grant another operator the admin role before you "
                                 "retire them"), name=name)
        raise ActionError(N_("%(name)s is the last admin; grant another operator the admin role before you "
                             "revoke it"), name=name)


def _plan_retire(receiver, by, name) -> tuple[str, dict]:
    """Stop a key from signing; its public half stays for verifying. The role is asked before
    what depends on the other operators (the last one, the last admin), as for every change."""
    check_name(name)
    O = audit_models(receiver.db).Operator
    row = O.get_or_none(O.name == name)
    if row is None:
        raise ActionError(N_("no operator named %(name)s"), name=name)
    if row.retired_at is not None:
        raise ActionError(N_("operator %(name)s is already retired"), name=name)
    active_operator(receiver, by)
    if not signed_operator_entries(receiver):
        raise ActionError(OLD_HOME)
    roles.require(receiver, by, OPERATOR_RETIRE)
    if not O.select().where(O.retired_at.is_null() & (O.id != row.id)).exists():
        raise ActionError(N_("%(name)s is the last active operator; add another one before retiring this one"), name=name)
    _keep_an_admin(receiver, name, "retire")
    return f"operator:{name}", {"name": name, "fingerprint": row.fingerprint}


def _retire_recheck(receiver, p: dict, rid: int) -> str | None:
    O = audit_models(receiver.db).Operator
    row = O.get_or_none(O.name == p["name"])
    if row is None or row.retired_at is not None or row.fingerprint != p["fingerprint"]:
        return f"operator {p['name']} is no longer the active operator request #{rid} retires; reject it"
    if not O.select().where(O.retired_at.is_null() & (O.id != row.id)).exists():
        return f"{p['name']} is the last active operator; reject request #{rid}"
    return None


def _apply_retire(receiver, payload: dict, entry: dict, at: float) -> dict:
    O = audit_models(receiver.db).Operator
    O.update(retired_at=at).where(O.name == payload["name"]).execute()
    return operator_info(receiver, payload["name"])


def _plan_role(action: str):
    def plan(receiver, by, name, role) -> tuple[str, dict]:
        """Grant or revoke one role; nobody changes their own roles."""
        check_name(name)
        try:
            role = roles.check_role(role)
        except roles.RoleError as exc:
            raise ActionError(exc.message, **exc.values) from None
        row = active_operator(receiver, name)
        active_operator(receiver, by)
        if not signed_operator_entries(receiver):
            raise ActionError(OLD_HOME)
        roles.require(receiver, by, action)
        if by == name:
            raise ActionError(N_("nobody grants or revokes their own roles: another admin signs a change to %(name)s's"),
                              name=name)
        held = roles.roles_of(receiver, name)
        if action == roles.OPERATOR_GRANT and role in held:
            raise ActionError(N_("%(name)s already holds the %(role)s role; nothing to sign"), name=name, role=role)
        if action == roles.OPERATOR_REVOKE:
            if role not in held:
                raise ActionError(N_("%(name)s does not hold the %(role)s role; nothing to sign"), name=name, role=role)
            if role == roles.ADMIN:
                _keep_an_admin(receiver, name, "revoke")
        return f"operator:{name}", {"name": name, "fingerprint": row.fingerprint, "role": role}

    return plan


def _plan_adopt(receiver, by) -> tuple[str, dict]:
    """Every registered operator and key as the table holds them, signed once into the log."""
    if signed_operator_entries(receiver):
        raise ActionError(N_("the operators are already in the signed log; there is nothing to adopt"))
    return "operators", {"operators": adoption_list(receiver)}


def _adopt_lines(receiver, payload: dict) -> list[str]:
    return [_("adopt these operators and keys, registered before operator changes were signed; compare each "
              "fingerprint with the operator's own record:"),
            *(_("  %(name)s  key %(key)s  retired", name=op["name"], key=short_fingerprint(op["fingerprint"]))
              if op["retired_at"] is not None else
              _("  %(name)s  key %(key)s  active", name=op["name"], key=short_fingerprint(op["fingerprint"]))
              for op in payload["operators"])]


def info_last(result: dict, receiver, name: str) -> dict:
    """A change's result as the command prints it: the operator as they stand now, then the entry;
    a held request says whose it is and their roles meanwhile."""
    if "pending" in result:
        return {**result, "name": name, "roles": roles.roles_of(receiver, name)}
    return {**{k: v for k, v in result.items() if k != "entry"}, "entry": result["entry"]}


def _grant_what(p: dict) -> str:
    return f"grant {p.get('name')} the {p.get('role')} role"


def _revoke_what(p: dict) -> str:
    return f"revoke the {p.get('role')} role from {p.get('name')}"


def _retire_said(p: dict) -> str:
    return _("retire operator %(name)s", name=p.get("name"))


def _grant_said(p: dict) -> str:
    return _("grant %(name)s the %(role)s role", name=p.get("name"), role=p.get("role"))


def _revoke_said(p: dict) -> str:
    return _("revoke the %(role)s role from %(name)s", name=p.get("name"), role=p.get("role"))


def _role_words(done: dict, granted: bool) -> str:
    role = json.loads(done["entry"]["payload"])["role"]
    values = {"role": role, "name": done["name"], "roles": ", ".join(done["roles"]) or _("none")}
    if granted:  # a checked name (NAME_RE) and role codes: all ours
        return Said(_("role %(role)s granted to %(name)s; roles now: %(roles)s", **values))
    return Said(_("role %(role)s revoked from %(name)s; roles now: %(roles)s", **values))


RETIRE = SignedAction(
    OPERATOR_RETIRE, roles.ADMIN, "Retire an operator", "operator retire NAME",
    summary=lambda done: Said(_("operator %(name)s retired; signatures it made stay verifiable", name=done["name"])),
    plan=_plan_retire, apply=_apply_retire, recheck=_retire_recheck,
    what=lambda p: f"retire operator {p.get('name')}", said=_retire_said,
    lines=lambda receiver, payload: [_("retire operator %(name)s (key %(key)s): it can no longer sign",
                                       name=payload["name"], key=short_fingerprint(payload["fingerprint"]))],
)
GRANT = SignedAction(
    roles.OPERATOR_GRANT, roles.ADMIN, "Give an operator a role", "operator grant NAME ROLE",
    summary=lambda done: _role_words(done, granted=True),
    plan=_plan_role(roles.OPERATOR_GRANT), role_note="never for oneself",
    apply=lambda receiver, payload, entry, at: operator_info(receiver, payload["name"]),
    what=_grant_what, said=_grant_said,
    lines=lambda receiver, payload: [_("grant %(name)s the %(role)s role (%(what)s)", name=payload["name"],
                                       role=payload["role"], what=_(roles.WHAT[payload["role"]]))],
)
REVOKE = SignedAction(
    roles.OPERATOR_REVOKE, roles.ADMIN, "Take a role away", "operator revoke NAME ROLE",
    summary=lambda done: _role_words(done, granted=False),
    plan=_plan_role(roles.OPERATOR_REVOKE), role_note="never for oneself",
    apply=lambda receiver, payload, entry, at: operator_info(receiver, payload["name"]),
    what=_revoke_what, said=_revoke_said, lines=lambda receiver, payload: [_revoke_said(payload)],
)
ADOPT = SignedAction(
    OPERATOR_ADOPT, roles.ADMIN, "Adopt operators from before signed operator changes", "operator adopt",
    summary=lambda done: ngettext("%(n)s operators adopted into the signed log",  # English: as it always read
                                  "%(n)s operators adopted into the signed log", len(done["operators"]),
                                  n=len(done["operators"])),
    plan=_plan_adopt, lines=_adopt_lines,
    apply=lambda receiver, payload, entry, at: {"operators": payload["operators"]},
)
