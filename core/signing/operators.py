"""Operators: adding them, listing them, and unlocking one's key to sign.

Each change is a signed entry of the audit chain (retiring, roles and adoption
are ``operator_changes``' signed actions); the key pair and its file are
``keys``' work. The public half is registered in the store, so old signatures
stay verifiable after a key is retired.
"""

from __future__ import annotations

import logging
from typing import Callable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from core.store.database import write_transaction

from . import countersign
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
    wrap,
    write_key_file,
)
from .passphrases import check_new_passphrase
from .registry import OPERATOR_ADD, OPERATOR_ADOPT

ADD_REASON = "new operator"


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


def add_operator(home, receiver, name: str, passphrase: str, now: float | None = None, *,
                 sponsor: Signer | None = None, reason: str = ADD_REASON,
                 roles: list[str] | None = None) -> dict:
    """Create a key pair for a new operator and register it with a signed ``operator.add`` entry.

    The first operator of a store signs its own entry; every later one is
    approved by an active operator (``sponsor``), and the new key signs its
    proof of possession inside the entry, so neither can add a key alone.
    The sponsor must be an admin and name the new operator's ``roles``; the
    first operator holds every role whatever is asked. With ``[signing]
    countersign`` on for operators the entry is a request for a second admin:
    the key file is written, the operator is registered once it is approved.
    """
    from . import audit

    check_name(name)
    try:
        wanted = roles_.check_roles(roles_.ROLES if roles is None else roles)
    except roles_.RoleError as exc:
        raise ActionError(str(exc)) from None
    hours = None if sponsor is None else countersign.hours_for(home, OPERATOR_ADD)
    check_new_passphrase(passphrase, name, site_names(receiver))
    reason = audit.check_reason(reason)
    folder = operators_folder(home, create=True)
    key = Ed25519PrivateKey.generate()
    raw = public_raw(key)
    pem = wrap(key, passphrase)
    fp = fingerprint(raw)
    path = key_path(home, name)
    O = audit_models(receiver.db).Operator
    written = False
    try:
        with write_transaction(receiver.db):
            if O.select().where(O.name == name).exists():
                raise ActionError(
                    f"operator {name} already exists; names are never reused, so old signatures stay attributable"
                )
            first = not O.select().exists()
            if not first and not signed_operator_entries(receiver):
                raise ActionError("this store's operators were added before operator changes were signed; "
                                  "run `ussd-console operator adopt --operator NAME` first")
            if first:
                signer = Signer(name, fp, key)
                wanted = list(roles_.ROLES)
            elif sponsor is None:
                raise ActionError("a new operator is approved by an admin: name them with --operator NAME")
            elif roles is None:
                raise ActionError(f"name the roles {name} holds with --role ROLE ({', '.join(roles_.ROLES)}); "
                                  "only the first operator of a home holds every role without asking")
            else:
                active_operator(receiver, sponsor.name)  # not retired since the key was unlocked
                roles_.require(receiver, sponsor.name, OPERATOR_ADD)
                signer = sponsor
            current = audit.head(receiver)
            payload = add_payload(current.count + 1, current.hash, name, key, signer.name, sorted(wanted))
            if hours is not None and not first:
                result = countersign.hold(receiver, signer, OPERATOR_ADD, f"operator:{name}", reason, payload,
                                          hours, now=now)
                write_key_file(folder / path.name, pem)
                written = True
                return {**result, "name": name, "fingerprint": fp, "roles": sorted(wanted)}
            entry = audit.append(receiver, signer, OPERATOR_ADD, f"operator:{name}", reason, payload, now=now)
            O.create(name=name, public_key=raw.hex(), fingerprint=fp, added_at=entry["at"])
            write_key_file(folder / path.name, pem)
            written = True
    except BaseException:
        if written:
            path.unlink(missing_ok=True)
        raise
    return {**operator_info(receiver, name), "entry": entry}


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
        raise ActionError(f"no operator named {name}")
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
        raise ActionError(f"no operator named {name}")
    if row.retired_at is not None:
        raise ActionError(f"operator {name} is retired and can no longer sign")
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
            raise ActionError(f"the key file for operator {name} does not match the key registered in the store")
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
