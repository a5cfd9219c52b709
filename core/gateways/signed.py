"""Adding and retiring a gateway account: signed operator actions, since they decide who may write the ledger.

The account row and its audit entry commit together (``core.signing.actions.sign_action``);
the tables are the store's (``core.store.gateway_tables``) and the check ``audit verify`` runs
is signing's (``core.signing.gateway_check``), both below this package.
"""

from __future__ import annotations

import os
import secrets

from core.signing.actions import sign_action
from core.signing.gateway_check import GATEWAY_ADD, GATEWAY_RETIRE
from core.store.gateway_tables import add_account, gateway_models, retire_account, source_label

from .accounts import (REPLIES, TOKEN_BYTES, GatewayError, check_kind, check_name, check_public_url, path_of,
                       read_secret, token_hash)
from .kinds import KINDS


def _plan_add(receiver, name, kind, secret_file, public_url, reply, token_digest):
    g = gateway_models(receiver.db)
    if g.Gateway.select().where(g.Gateway.name == name).exists():
        raise GatewayError(f"gateway {name} already exists; names are never reused, so counts stay attributable")
    payload = {"name": name, "kind": kind, "token_hash": token_digest, "secret_file": secret_file,
               "public_url": public_url, "reply": reply}
    return GATEWAY_ADD, f"gateway:{name}", payload


def add_gateway(home, receiver, name, kind, *, operator: str, passphrase: str | None, reason: str,
                secret_file: str | None = None, public_url: str | None = None, reply: str = "END",
                signer=None, now: float | None = None) -> dict:
    """Add a gateway account, signed; returns its info and the path with its token (shown once)."""
    name, kind = check_name(name), check_kind(kind)
    if KINDS[kind].signed and not secret_file:
        raise GatewayError(f"a {kind} gateway signs its posts: give the secret with --secret-file PATH")
    if KINDS[kind].needs_url and not public_url:
        raise GatewayError(f"a {kind} gateway signs the URL it posts to: give it with --public-url BASE")
    if reply not in REPLIES:
        raise GatewayError("--reply is END or CON")
    public_url = check_public_url(public_url)
    if secret_file:
        secret_file = os.path.abspath(secret_file)
        read_secret(secret_file)  # refuse a missing or open secret file now, not at the first post
    token = secrets.token_urlsafe(TOKEN_BYTES)
    digest = token_hash(token)

    def plan():
        return _plan_add(receiver, name, kind, secret_file, public_url, reply, digest)

    def apply(payload, entry, at):
        add_account(receiver.db, payload, at=at, by=entry["operator"], seq=entry["seq"])
        return {"name": name, "kind": kind, "path": path_of(name, token), "source": source_label(name)}

    result = sign_action(home, receiver, plan, apply, operator, passphrase, reason, now, None, signer)
    if "pending" in result:  # held for a second admin: the token is shown now, or never
        result.update(name=name, kind=kind, path=path_of(name, token), source=source_label(name))
    if public_url:
        result["url"] = public_url + result["path"]
    return result


def retire_gateway(home, receiver, name, *, operator: str, passphrase: str | None, reason: str,
                   signer=None, now: float | None = None) -> dict:
    """Retire a gateway, signed: its path answers 404 from then on; its counts stay."""
    name = check_name(name)
    g = gateway_models(receiver.db)

    def plan():
        row = g.Gateway.get_or_none(g.Gateway.name == name)
        if row is None:
            raise GatewayError(f"no gateway {name}")
        if row.retired_at is not None:
            raise GatewayError(f"gateway {name} is already retired")
        return GATEWAY_RETIRE, f"gateway:{name}", {"name": name, "token_hash": row.token_hash}

    def apply(payload, entry, at):
        retire_account(receiver.db, name, at=at, seq=entry["seq"])
        return {"name": name, "retired_at": at}

    return sign_action(home, receiver, plan, apply, operator, passphrase, reason, now, None, signer)
