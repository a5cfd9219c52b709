"""Adding and retiring a gateway account: signed operator actions, since they decide who may write the ledger.

Each is a ``SignedAction``: the account row and its audit entry commit together
(``core.signing.signed_action.sign``); the tables are the store's (``core.store.gateway_tables``)
and the check ``audit verify`` runs is signing's (``core.signing.gateway_check``), both below
this package.
"""

from __future__ import annotations

import os
import secrets

from core.i18n import N_, _
from core.rules.text import plain
from core.signing import roles
from core.signing.gateway_check import GATEWAY_ADD, GATEWAY_RETIRE
from core.signing.signed_action import SignedAction
from core.store.gateway_tables import add_account, gateway_models, retire_account, source_label

from .accounts import (REPLIES, TOKEN_BYTES, GatewayError, check_kind, check_name, check_public_url, path_of,
                       read_secret, token_hash)
from .kinds import KINDS


def prepare_add(name, kind, secret_file: str | None = None, public_url: str | None = None,
                reply: str = "END") -> tuple[dict, str]:
    """Check what an add names and make its token: the add's arguments (with the token's hash
    only) and the token itself, which is shown once and never kept."""
    name, kind = check_name(name), check_kind(kind)
    if KINDS[kind].signed and not secret_file:
        raise GatewayError(N_("a %(kind)s gateway signs its posts: give the secret with --secret-file PATH"), kind=kind)
    if KINDS[kind].needs_url and not public_url:
        raise GatewayError(N_("a %(kind)s gateway signs the URL it posts to: give it with --public-url BASE"), kind=kind)
    if reply not in REPLIES:
        raise GatewayError(N_("--reply is END or CON"))
    public_url = check_public_url(public_url)
    if secret_file:
        secret_file = os.path.abspath(secret_file)
        read_secret(secret_file)  # refuse a missing or open secret file now, not at the first post
    token = secrets.token_urlsafe(TOKEN_BYTES)
    return {"name": name, "kind": kind, "secret_file": secret_file, "public_url": public_url, "reply": reply,
            "token_digest": token_hash(token)}, token


def _plan_add(receiver, by, name, kind, secret_file, public_url, reply, token_digest) -> tuple[str, dict]:
    g = gateway_models(receiver.db)
    if g.Gateway.select().where(g.Gateway.name == name).exists():
        raise GatewayError(N_("gateway %(name)s already exists; names are never reused, so counts stay attributable"),
                           name=name)
    payload = {"name": name, "kind": kind, "token_hash": token_digest, "secret_file": secret_file,
               "public_url": public_url, "reply": reply}
    return f"gateway:{name}", payload


def _apply_add(receiver, payload: dict, entry: dict, at: float) -> dict:
    add_account(receiver.db, payload, at=at, by=entry["operator"], seq=entry["seq"])
    return {"name": payload["name"], "kind": payload["kind"]}


def _add_what(p: dict) -> str:
    return f"add gateway {p.get('name')} ({p.get('kind')})"


def _add_said(p: dict) -> str:
    return _("add gateway %(name)s (%(kind)s)", name=p.get("name"), kind=p.get("kind"))


def _add_recheck(receiver, p: dict, rid: int) -> str | None:
    G = gateway_models(receiver.db).Gateway
    if G.select().where(G.name == p["name"]).exists():
        return f"gateway {p['name']} exists already; reject request #{rid}"
    return None


def _add_lines(receiver, payload: dict) -> list[str]:
    lines = [_("add gateway %(name)s (%(kind)s): its posts are offered to the ledger", name=payload["name"],
               kind=payload["kind"])]
    if payload["secret_file"]:
        lines.append(_("its posts are checked with the secret in %(file)s", file=plain(payload["secret_file"])))
    if payload["public_url"]:
        lines.append(_("it posts to %(url)s", url=plain(payload["public_url"])))
    return lines


def added(result: dict, args: dict, token: str) -> dict:
    """A signed (or held) add's result with the gateway's path, which carries the token (shown once)."""
    name, kind, url = args["name"], args["kind"], args["public_url"]
    shown = {"name": name, "kind": kind, "path": path_of(name, token), "source": source_label(name)}
    out = {**result, **shown} if "pending" in result else {"entry": result["entry"], **shown}
    if url:
        out["url"] = url + out["path"]
    return out


def _plan_retire(receiver, by, name) -> tuple[str, dict]:
    name = check_name(name)
    g = gateway_models(receiver.db)
    row = g.Gateway.get_or_none(g.Gateway.name == name)
    if row is None:
        raise GatewayError(N_("no gateway %(name)s"), name=name)
    if row.retired_at is not None:
        raise GatewayError(N_("gateway %(name)s is already retired"), name=name)
    return f"gateway:{name}", {"name": name, "token_hash": row.token_hash}


def _retire_what(p: dict) -> str:
    return f"retire gateway {p.get('name')}"


def _retire_said(p: dict) -> str:
    return _("retire gateway %(name)s", name=p.get("name"))


def _retire_recheck(receiver, p: dict, rid: int) -> str | None:
    G = gateway_models(receiver.db).Gateway
    row = G.get_or_none(G.name == p["name"])
    if row is None or row.retired_at is not None or row.token_hash != p["token_hash"]:
        return f"gateway {p['name']} is no longer the active account request #{rid} retires; reject it"
    return None


def _apply_retire(receiver, payload: dict, entry: dict, at: float) -> dict:
    retire_account(receiver.db, payload["name"], at=at, seq=entry["seq"])
    return {"name": payload["name"], "retired_at": at}


ADD = SignedAction(
    GATEWAY_ADD, roles.ADMIN, "Add a gateway", "gateway add",
    summary=lambda done: f"gateway {done['name']} ({done['kind']}) added",
    plan=_plan_add, apply=_apply_add, lines=_add_lines, what=_add_what, said=_add_said,
    recheck=_add_recheck,
)
# Its path answers 404 from then on; its counts stay.
RETIRE = SignedAction(
    GATEWAY_RETIRE, roles.ADMIN, "Retire a gateway", "gateway retire",
    summary=lambda done: f"gateway {done['name']} retired",
    plan=_plan_retire, apply=_apply_retire,
    lines=lambda receiver, payload: [_("retire gateway %(name)s: its path answers 404 from then on",
                                       name=payload["name"])],
    what=_retire_what, said=_retire_said, recheck=_retire_recheck,
)
