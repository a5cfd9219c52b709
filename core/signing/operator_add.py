"""Adding an operator: a signed action (``SignedAction``) whose payload the new key helps sign.

The new key pair is made first and signs its proof of possession inside the
entry's payload (``operators.add_payload``), so neither the sponsor nor the new
key can add a key alone. The first operator of a home has nobody to sponsor them:
they sign their own entry with the key it registers (``signs_itself``), and hold
every role. The key file is written before the entry is signed and removed again
when signing fails, so a registered operator always has their key file.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from core.i18n import N_, _
from core.rules.text import Said

from . import audit
from . import roles as roles_
from .audit_models import audit_models
from .keys import ActionError, Signer, check_name, fingerprint, key_path, operators_folder, public_raw, wrap, \
    write_key_file
from .operators import ADD_REASON, OLD_HOME, add_payload, operator_info, signed_operator_entries, site_names
from .passphrases import check_new_passphrase
from .registry import OPERATOR_ADD
from .signed_action import SignedAction, sign

def _first(receiver) -> bool:
    O = audit_models(receiver.db).Operator
    return not O.select().exists()


def _signs_itself(receiver, by, name, key, roles=None) -> bool:
    return by == name and _first(receiver)


def _plan(receiver, by, name, key: Ed25519PrivateKey, roles: list[str] | None = None) -> tuple[str, dict]:
    """The entry the sponsor ``by`` (or the first operator, themselves) signs: the new public key,
    its proof over the entry's own number and the head before it, and the roles."""
    check_name(name)
    O = audit_models(receiver.db).Operator
    if O.select().where(O.name == name).exists():
        raise ActionError(N_("operator %(name)s already exists; names are never reused, so old signatures stay "
                             "attributable"), name=name)
    if _first(receiver):
        if by != name:
            raise ActionError(N_("no operator named %(name)s"), name=by)
        wanted = list(roles_.ROLES)
    else:
        if not signed_operator_entries(receiver):
            raise ActionError(OLD_HOME)
        if by == name:
            raise ActionError(N_("a new operator is approved by an admin: name them with --operator NAME"))
        if roles is None:
            raise ActionError(N_("name the roles %(name)s holds with --role ROLE (%(roles)s); "
                                 "only the first operator of a home holds every role without asking"),
                              name=name, roles=", ".join(roles_.ROLES))
        wanted = roles
    current = audit.head(receiver)
    return f"operator:{name}", add_payload(current.count + 1, current.hash, name, key, by, sorted(wanted))


def _apply(receiver, payload: dict, entry: dict, at: float) -> dict:
    O = audit_models(receiver.db).Operator
    O.create(name=payload["name"], public_key=payload["public_key"], fingerprint=payload["fingerprint"], added_at=at)
    return operator_info(receiver, payload["name"])


def _what(p: dict) -> str:
    return f"add operator {p.get('name')} (roles: {', '.join(p.get('roles') or roles_.ROLES)})"


def _said(p: dict) -> str:
    return _("add operator %(name)s (roles: %(roles)s)", name=p.get("name"),
             roles=", ".join(p.get("roles") or roles_.ROLES))


def _recheck(receiver, p: dict, rid: int) -> str | None:
    O = audit_models(receiver.db).Operator
    if O.select().where((O.name == p["name"]) | (O.fingerprint == p["fingerprint"])).exists():
        return f"operator {p['name']} (or that key) is registered already; reject request #{rid}"
    return None


ADD = SignedAction(
    OPERATOR_ADD, roles_.ADMIN, "Add an operator", "operator add NAME --role ROLE --operator NAME",
    # The name is checked (NAME_RE, ASCII) and the roles are codes: the line is all ours, a Said.
    summary=lambda done: Said(_("operator %(name)s added; roles: %(roles)s", name=done["name"],
                                roles=", ".join(done["roles"]))),
    plan=_plan, apply=_apply, lines=lambda receiver, payload: [_said(payload)], what=_what, said=_said,
    recheck=_recheck,
    signs_itself=_signs_itself, role_note="the operator who approves (`--operator`)",
)


def add_operator(home, receiver, name: str, passphrase: str, now: float | None = None, *,
                 sponsor: Signer | None = None, reason: str = ADD_REASON,
                 roles: list[str] | None = None) -> dict:
    """Create a key pair for a new operator and register it with a signed ``operator.add`` entry.

    The first operator of a store signs its own entry; every later one is
    approved by an active admin (``sponsor``) who names the new operator's
    ``roles``. With ``[signing] countersign`` on for operators the entry is a
    request for a second admin: the key file is written, the operator is
    registered once it is approved.
    """
    check_name(name)
    try:
        roles_.check_roles(roles_.ROLES if roles is None else roles)
    except roles_.RoleError as exc:
        raise ActionError(exc.message, **exc.values) from None
    check_new_passphrase(passphrase, name, site_names(receiver))
    reason = audit.check_reason(reason)
    folder = operators_folder(home, create=True)
    key = Ed25519PrivateKey.generate()
    raw = public_raw(key)
    signer = sponsor or Signer(name, fingerprint(raw), key)
    args = {"name": name, "key": key, "roles": None if roles is None else roles_.check_roles(roles)}
    ADD.plan(receiver, signer.name, **args)  # refused before a key file is written
    path = key_path(home, name)
    write_key_file(folder / path.name, wrap(key, passphrase))
    try:
        result = sign(home, receiver, ADD, args, operator=signer.name, signer=signer, reason=reason, now=now)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    if "pending" in result:
        return {**result, "name": name, "fingerprint": fingerprint(raw), "roles": sorted(args["roles"])}
    return {**{k: v for k, v in result.items() if k != "entry"}, "entry": result["entry"]}
