"""The operator registry as the signed log builds it, entry by entry (docs/rules.md#operators-and-signatures).

`audit verify` checks each entry's signature against the keys the log itself
has registered so far, never against the ``operators`` table: a key swapped in
the table then changes nothing that verifies, and reconciling the table with
the log names the swapped row. A store from before signed operator changes is
seeded from its one ``operator.adopt`` entry, which lists the keys that signed
the older entries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from types import SimpleNamespace

from core.i18n import N_
from core.rules.text import Twofold, escape_text, worded

from . import held as held_
from . import roles as roles_
from .keys import NAME_RE, fingerprint, proof_message, verify_signature

# Adding, retiring and adopting operators are entries of the audit chain (docs/rules.md#operators-and-signatures).
OPERATOR_ADD = "operator.add"
OPERATOR_RETIRE = "operator.retire"
OPERATOR_ADOPT = "operator.adopt"

HEX64 = frozenset("0123456789abcdef")


@dataclass
class Key:
    name: str
    public_key: str
    fingerprint: str
    added_seq: int  # 0: listed by the adoption, registered before the log began
    legacy_retired_at: float | None = None  # a retirement from before signed operator changes
    retired_seq: int | None = None
    roles: frozenset = roles_.EVERY  # what the log lets this key sign (docs/roles.md)


@dataclass
class Registry:
    by_fp: dict[str, Key] = field(default_factory=dict)
    by_name: dict[str, Key] = field(default_factory=dict)
    adoption_seq: int | None = None  # the adoption entry the registry was seeded from
    adopted: list = field(default_factory=list)
    requests: dict = field(default_factory=dict)  # seq -> held_.Request: the held requests so far

    def register(self, key: Key) -> None:
        self.by_fp[key.fingerprint] = key
        self.by_name[key.name] = key

    def active(self) -> dict[str, str]:
        """Active operators' names and key fingerprints."""
        return {k.name: k.fingerprint for k in self.by_name.values()
                if k.retired_seq is None and k.legacy_retired_at is None}

    def holders(self) -> dict[str, tuple[frozenset, bool]]:
        """name -> (roles, active), as the role rules see the operators at this point."""
        return {k.name: (k.roles, k.retired_seq is None and k.legacy_retired_at is None)
                for k in self.by_name.values()}


def _payload(raw) -> dict | None:
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _is_hex64(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= HEX64


def _key_of(listed) -> Key | None:
    """One operator of an adoption list, or None when it is not well formed."""
    if not isinstance(listed, dict):
        return None
    name, pub, fp, retired = (listed.get(k) for k in ("name", "public_key", "fingerprint", "retired_at"))
    if not (isinstance(name, str) and NAME_RE.fullmatch(name) and _is_hex64(pub) and _is_hex64(fp)):
        return None
    if fingerprint(bytes.fromhex(pub)) != fp:
        return None
    if retired is not None and not isinstance(retired, (int, float)):
        return None
    return Key(name, pub, fp, 0, None if retired is None else float(retired))


def seed(rows) -> Registry:
    """A registry holding the keys listed by the log's first adoption entry, if any."""
    registry = Registry()
    for pos, row in enumerate(rows, start=1):
        if row.action != OPERATOR_ADOPT:
            continue
        listed = (_payload(row.payload) or {}).get("operators")
        keys = [_key_of(x) for x in listed] if isinstance(listed, list) else [None]
        if keys and all(keys) and len({k.name for k in keys}) == len(keys):
            for key in keys:
                registry.register(key)
            registry.adopted = listed
        registry.adoption_seq = pos
        break
    return registry


def registered_later(rows) -> dict[str, str]:
    """Fingerprint -> name of every key some ``operator.add`` entry registers, for clearer verdicts."""
    out = {}
    for row in rows:
        if row.action == OPERATOR_ADD:
            p = _payload(row.payload) or {}
            if isinstance(p.get("fingerprint"), str) and isinstance(p.get("name"), str):
                out[p["fingerprint"]] = p["name"]
    return out


def self_registration(row, registry: Registry) -> str | None:
    """The public key an entry may be checked with when it registers the store's first operator."""
    if row.action != OPERATOR_ADD or registry.by_fp:
        return None
    p = _payload(row.payload) or {}
    if p.get("fingerprint") == row.key and p.get("name") == row.operator and _is_hex64(p.get("public_key")):
        return p["public_key"]
    return None


def _countersign(row, pos: int, registry: Registry, p: dict | None, signer: Key | None) -> str | None:
    """A held request (checked as the action it holds, by its signer, now) or its approval or
    rejection (bound to a waiting request; an approval applies the held action here)."""
    if row.action == held_.REQUEST:
        request = held_.read_request(pos, row.target, row.operator, row.key, row.at, row.prev_hash, row.hash,
                                     row.reason, p)
        if isinstance(request, str):
            return request
        problem = roles_.entry_problem(pos, request.action, str(row.operator),
                                       None if signer is None else signer.roles, request.payload, registry.holders())
        if problem:
            return problem
        registry.requests[pos] = request
        return None
    problem = roles_.entry_problem(pos, row.action, str(row.operator), None if signer is None else signer.roles,
                                   p, registry.holders())
    if problem:
        return problem
    problem, request = held_.decision_problem(pos, row.action, row.target, str(row.operator), float(row.at), p,
                                              registry.requests)
    if problem:
        return problem
    if row.action == held_.APPROVE:
        requester = registry.by_fp.get(request.key)
        if requester is None or requester.retired_seq is not None or requester.legacy_retired_at is not None:
            return worded(N_("retired: entry #%(pos)s approves request #%(request)s, whose requester can no longer "
                             "sign"), pos=pos, request=request.seq)
        effect = SimpleNamespace(action=request.action, target=request.target, operator=request.operator,
                                 key=request.key, prev_hash=request.prev_hash,
                                 payload=json.dumps(request.payload))
        problem = apply(effect, pos, registry, request)
        if problem:
            return worded(N_("%(problem)s (the action of request #%(request)s, approved by entry #%(pos)s)"),
                          problem=problem, request=request.seq, pos=pos)
    held_.decide(request, row.action, pos, str(row.operator))
    return None


def _no_target(pos: int, action) -> Twofold:
    return worded(N_("malformed: entry #%(pos)s (%(action)s) does not name its operator as its target"), pos=pos,
                  action=escape_text(action, 40))


def apply(row, pos: int, registry: Registry, request: held_.Request | None = None) -> str | None:
    """Check an entry whose signature holds against the role rules, and an operator entry's
    effect; record that effect; say why it is bad, or None. ``request`` is the held request
    an approval at ``pos`` applies (its key proof was made at the request's point)."""
    p = _payload(row.payload)
    signer = registry.by_fp.get(row.key)
    if row.action in held_.ACTIONS:
        return _countersign(row, pos, registry, p, signer)
    problem = roles_.entry_problem(pos, row.action, str(row.operator), None if signer is None else signer.roles,
                                   p, registry.holders())
    if problem:
        return problem
    if row.action in (roles_.OPERATOR_GRANT, roles_.OPERATOR_REVOKE):
        if p is None or row.target != f"operator:{p.get('name')}":
            return _no_target(pos, row.action)
        key = registry.by_name[p["name"]]
        key.roles = roles_.changed(row.action, p, key.roles)
        return None
    if row.action not in (OPERATOR_ADD, OPERATOR_RETIRE, OPERATOR_ADOPT):
        return None
    if p is None:
        return worded(N_("malformed: entry #%(pos)s (%(action)s) has no readable payload"), pos=pos,
                      action=escape_text(row.action, 40))
    if row.action == OPERATOR_ADOPT:
        if registry.adoption_seq != pos:
            return worded(N_("adopted twice: entry #%(pos)s adopts operators again (the first adoption is entry "
                             "#%(first)s)"), pos=pos, first=registry.adoption_seq)
        if not registry.adopted or p.get("operators") != registry.adopted:
            return worded(N_("malformed: entry #%(pos)s lists operators that cannot be read"), pos=pos)
        return None
    name = p.get("name")
    if not isinstance(name, str) or row.target != f"operator:{name}":
        return _no_target(pos, row.action)
    shown = escape_text(name, 40)  # from the log, which may have been tampered with
    if row.action == OPERATOR_RETIRE:
        key = registry.by_name.get(name)
        if key is None or key.fingerprint != p.get("fingerprint"):
            return worded(N_("unknown operator: entry #%(pos)s retires %(name)s, whose key the log never registered"),
                          pos=pos, name=shown)
        if key.retired_seq is not None or key.legacy_retired_at is not None:
            return worded(N_("retired twice: entry #%(pos)s retires %(name)s, already retired"), pos=pos, name=shown)
        key.retired_seq = pos
        return None
    pub, fp, proof = p.get("public_key"), p.get("fingerprint"), p.get("key_proof")
    if not (NAME_RE.fullmatch(name) and _is_hex64(pub) and _is_hex64(fp)) or fingerprint(bytes.fromhex(pub)) != fp:
        return worded(N_("malformed: entry #%(pos)s registers a key whose fingerprint does not match it"), pos=pos)
    if name in registry.by_name:
        return worded(N_("name reused: entry #%(pos)s adds %(name)s, a name the log already registered"), pos=pos,
                      name=shown)
    if fp in registry.by_fp:
        return worded(N_("key reused: entry #%(pos)s adds %(name)s with %(other)s's key"), pos=pos, name=shown,
                      other=escape_text(registry.by_fp[fp].name, 40))
    first = not registry.by_fp
    if first != (row.operator == name):
        if not first:
            return worded(N_("unapproved: entry #%(pos)s adds %(name)s without an active operator's signature"),
                          pos=pos, name=shown)
        return worded(N_("malformed: entry #%(pos)s registers the first operator but is signed by someone else"),
                      pos=pos)
    proof_seq, proof_prev = (pos, row.prev_hash) if request is None else (request.seq, request.prev_hash)
    if not verify_signature(pub, proof, proof_message(proof_seq, proof_prev, name, pub, row.operator)):
        return worded(N_("bad signature: entry #%(pos)s adds %(name)s without a proof made by the new key"),
                      pos=pos, name=shown)
    held = roles_.payload_roles(p)
    if held is None:
        return worded(N_("malformed: entry #%(pos)s adds %(name)s with roles that are not %(roles)s"), pos=pos,
                      name=shown, roles=", ".join(roles_.ROLES))
    if first and held != roles_.EVERY:
        return worded(N_("malformed: entry #%(pos)s registers the first operator without every role"), pos=pos)
    registry.register(Key(name, pub, fp, pos, roles=held))
    return None
