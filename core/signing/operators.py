"""Operators: listing them, the payload that adds one, and unlocking one's key to sign.

Each change is a signed entry of the audit chain (adding is ``operator_add``'s
signed action; retiring, roles and adoption are ``operator_changes``'); the key pair and its file are
``keys``' work. The public half is registered in the store, so old signatures
stay verifiable after a key is retired.
"""

from __future__ import annotations

import logging
from typing import Callable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from core.i18n import N_

from . import roles as roles_
from . import unlock_guard
from .audit_models import audit_models
from .keys import (
    ActionError,
    Signer,
    check_name,
    fingerprint,
    is_current_format,
    key_path,
    operators_folder,
    passphrase_bytes,
    proof_message,
    public_raw,
    read_key_file,
    rewrap_key_file,
    unwrap,
)
from .registry import OPERATOR_ADD, OPERATOR_ADOPT

ADD_REASON = "new operator"
OLD_HOME = N_("this store's operators were added before operator changes were signed; "
              "run `ussd-console operator adopt --operator NAME` first")


def _operator_row(receiver, name: str):
    O = audit_models(receiver.db).Operator
    return O.get_or_none(O.name == name)


def add_payload(seq: int, prev_hash: str, name: str, key: Ed25519PrivateKey, sponsor: str,
                roles: list[str] | None = None) -> dict:
    """The signed payload of an ``operator.add`` entry: the new public key, its proof of
    possession and, since roles, the roles the new operator holds (none: an entry from before)."""
    raw = public_raw(key)
    proof = key.sign(proof_message(seq, prev_hash, name, raw.hex(), sponsor))
    payload = {"name": name, "public_key": raw.hex(), "fingerprint": fingerprint(raw), "key_proof": proof.hex()}
    if roles is not None:
        payload["roles"] = list(roles)
    return payload


def signed_operator_entries(receiver) -> bool:
    """Whether the log already records operator changes (a store from before them has none)."""
    E = audit_models(receiver.db).AuditEntry
    return E.select().where(E.action.in_((OPERATOR_ADD, OPERATOR_ADOPT))).exists()


def site_names(receiver) -> list[str]:
    """The sites the store has cases for: words an attacker of this home tries first in a passphrase."""
    C = receiver.m.Case
    return [row.site for row in C.select(C.site).distinct()]


def _as_info(row) -> dict:
    return {
        "name": row.name,
        "fingerprint": row.fingerprint,
        "added_at": row.added_at,
        "retired_at": row.retired_at,
        "active": row.retired_at is None,
    }


def operator_info(receiver, name: str) -> dict:
    row = _operator_row(receiver, name)
    if row is None:
        raise ActionError(N_("no operator named %(name)s"), name=name)
    return {**_as_info(row), "roles": roles_.roles_of(receiver, name)}


def list_operators(receiver, include_retired: bool = True) -> list[dict]:
    O = audit_models(receiver.db).Operator
    q = O.select().order_by(O.added_at, O.id)
    if not include_retired:
        q = q.where(O.retired_at.is_null())
    held = roles_.holders(receiver)
    return [{**_as_info(row), "roles": sorted(held.get(row.name, (frozenset(), False))[0])} for row in q]


def adoption_list(receiver) -> list[dict]:
    """The operator rows an adoption would sign, as they stand in the table."""
    O = audit_models(receiver.db).Operator
    return [{"name": r.name, "public_key": r.public_key, "fingerprint": r.fingerprint, "added_at": r.added_at,
             "retired_at": r.retired_at} for r in O.select().order_by(O.id)]


def active_operator(receiver, name: str):
    """The registered row of an operator allowed to sign now, or a one-line refusal."""
    check_name(name)
    row = _operator_row(receiver, name)
    if row is None:
        raise ActionError(N_("no operator named %(name)s"), name=name)
    if row.retired_at is not None:
        raise ActionError(N_("operator %(name)s is retired and can no longer sign"), name=name)
    return row


def load_signer(home, receiver, name: str, passphrase: str, *, where: str = "cli",
                announce: Callable[[str], None] | None = None) -> Signer:
    """Unlock an active operator's key; a wrong passphrase is a one-line error.

    ``where`` (cli, console, browser) goes into the home's log line of a failed
    unlock. The attempt holds the operator's turn (``unlock_guard.turn``: one
    at a time across processes), and after five failures in a row first waits,
    said through ``announce``. A key file in the old wrapping is re-wrapped on
    a good unlock.
    """
    row = active_operator(receiver, name)
    passphrase_bytes(passphrase)
    operators_folder(home)
    path = key_path(home, name)
    data = read_key_file(path)
    with unlock_guard.turn(home, name, where, announce) as began:
        unlock_guard.unlocking(name, where)
        try:
            key = unwrap(data, name, passphrase)
        except ActionError:
            unlock_guard.failed(home, name, where, began)
            raise
        if public_raw(key).hex() != row.public_key:
            raise ActionError(N_("the key file for operator %(name)s does not match the key registered in the store"),
                              name=name)
        unlock_guard.succeeded(home, name)
    if not is_current_format(data):
        try:
            rewrap_key_file(path, key, passphrase)
        except OSError as exc:  # the old file is intact and still unlocks: sign now, re-wrap next time
            unlock_guard.home_log(home, logging.WARNING,
                                  f"cannot re-wrap the key file of operator {name}: {exc.strerror or exc}")
        else:
            unlock_guard.home_log(home, logging.INFO, f"key file of operator {name} re-wrapped with the bcrypt KDF")
    return Signer(name, row.fingerprint, key)
