"""Held requests and their approvals, as the signed log records them (docs/roles.md#a-second-pair-of-eyes).

With ``[signing] countersign`` on for a kind of action, the first admin's
signature is a ``countersign.request`` entry holding the action (its name,
target and payload) and how many hours it waits; nothing applies. A second
admin's ``countersign.approve`` entry names the request by number and entry
hash, and the held action takes effect at that point of the chain, as the
requester's action; ``countersign.reject`` closes it with no effect.

The rules here are shared by signing (the store's view) and by ``audit
verify`` (the replay), so both refuse the same approvals: bound to a held
request's hash, by an admin other than the requester, before it expires,
once.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.config import COUNTERSIGN_KINDS
from core.i18n import N_
from core.rules.text import escape_text, worded

REQUEST = "countersign.request"
APPROVE = "countersign.approve"
REJECT = "countersign.reject"
DECISIONS = (APPROVE, REJECT)
ACTIONS = (REQUEST, APPROVE, REJECT)
HOUR = 3600.0
MAX_HOURS = 720.0

# The actions each kind of ``[signing] countersign`` holds for a second admin.
KINDS = {
    "retention": ("retention.set",),
    "gateway": ("gateway.add", "gateway.retire"),
    "operator": ("operator.add", "operator.retire", "operator.grant", "operator.revoke"),
}
assert tuple(KINDS) == COUNTERSIGN_KINDS
KIND_OF = {action: kind for kind, held in KINDS.items() for action in held}

WAITING, APPROVED, REJECTED = "waiting", "approved", "rejected"


@dataclass
class Request:
    """One held action: the request entry's number, hash and signer, and what it holds."""

    seq: int
    hash: str
    prev_hash: str
    operator: str
    key: str
    at: float
    reason: str
    action: str
    target: str
    payload: dict
    hours: float
    state: str = WAITING
    decided_seq: int | None = None
    decided_by: str | None = None

    @property
    def expires_at(self) -> float:
        return self.at + self.hours * HOUR

    def expired(self, at: float) -> bool:
        return at > self.expires_at


def request_payload(action: str, target: str, payload: dict, hours: float) -> dict:
    return {"action": action, "target": target, "payload": payload, "hours": float(hours)}


def read_request(pos: int, target, operator, key, at, prev_hash, entry_hash, reason,
                 payload: dict | None) -> Request | str:
    """The request an entry holds, or why it is not a well-formed one."""
    p = payload if isinstance(payload, dict) else {}
    action, held_target, held, hours = p.get("action"), p.get("target"), p.get("payload"), p.get("hours")
    if action not in KIND_OF:
        return worded(N_("malformed: request #%(pos)s holds %(action)s, not an action a second admin approves"),
                      pos=pos, action=escape_text(action, 40))
    if not isinstance(held_target, str) or held_target != target or not isinstance(held, dict):
        return worded(N_("malformed: request #%(pos)s does not hold its action's target and payload"), pos=pos)
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not 0 < hours <= MAX_HOURS:
        return worded(N_("malformed: request #%(pos)s names no number of hours to wait"), pos=pos)
    return Request(pos, str(entry_hash), str(prev_hash), str(operator), str(key), float(at), str(reason),
                   action, held_target, held, float(hours))


# (the entry approves, the request was approved): a second decision on a decided request.
_DECIDED_TWICE = {
    (True, True): N_("decided twice: entry #%(pos)s approves request #%(request)s, already approved by entry #%(decided)s"),
    (True, False): N_("decided twice: entry #%(pos)s approves request #%(request)s, already rejected by entry #%(decided)s"),
    (False, True): N_("decided twice: entry #%(pos)s rejects request #%(request)s, already approved by entry #%(decided)s"),
    (False, False): N_("decided twice: entry #%(pos)s rejects request #%(request)s, already rejected by entry #%(decided)s"),
}


def decision_problem(pos: int, action: str, target, operator: str, at: float, payload: dict | None,
                     requests: dict[int, Request]) -> tuple[str | None, Request | None]:
    """Why an approval or rejection at entry ``pos`` is not bound to a waiting request it may decide.

    The approver's role is the role rules' work (``roles.needed``); this checks
    the binding, the requester, the expiry and that a request is decided once.
    """
    p = payload if isinstance(payload, dict) else {}
    number, digest = p.get("request"), p.get("request_hash")
    approves = action == APPROVE
    request = requests.get(number) if isinstance(number, int) and not isinstance(number, bool) else None
    if request is None:
        return worded(N_("unbound approval: entry #%(pos)s approves request #%(request)s, which is not a held request")
                      if approves else
                      N_("unbound approval: entry #%(pos)s rejects request #%(request)s, which is not a held request"),
                      pos=pos, request=escape_text(number, 20)), None
    if digest != request.hash or target != f"request:{request.seq}":
        return worded(N_("unbound approval: entry #%(pos)s approves request #%(request)s but is not bound to its hash "
                         "(it would approve something else than what was requested)") if approves else
                      N_("unbound approval: entry #%(pos)s rejects request #%(request)s but is not bound to its hash "
                         "(it would approve something else than what was requested)"),
                      pos=pos, request=request.seq), None
    if request.state != WAITING:
        return worded(_DECIDED_TWICE[approves, request.state == APPROVED], pos=pos, request=request.seq,
                      decided=request.decided_seq), None
    signer = escape_text(operator, 40)
    if approves and operator == request.operator:
        return worded(N_("self-approval: entry #%(pos)s approves request #%(request)s, made by its own signer "
                         "%(signer)s; a second admin approves"), pos=pos, request=request.seq, signer=signer), None
    if approves and request.action in ("operator.grant", "operator.revoke") and \
            request.payload.get("name") == operator:
        return worded(N_("self-grant: entry #%(pos)s approves request #%(request)s, a change to the roles of its own "
                         "signer %(signer)s"), pos=pos, request=request.seq, signer=signer), None
    if approves and request.expired(at):
        return worded(N_("expired: entry #%(pos)s approves request #%(request)s %(seconds)s s after it expired "
                         "(%(hours)s h after it was made)"), pos=pos, request=request.seq,
                      seconds=f"{at - request.expires_at:.0f}", hours=f"{request.hours:g}"), None
    return None, request


def decide(request: Request, action: str, pos: int, operator: str) -> None:
    request.state = APPROVED if action == APPROVE else REJECTED
    request.decided_seq = pos
    request.decided_by = operator


def effects(entries: list[dict]) -> list[dict]:
    """Verified entries as reconciling sees them: an approval stands for the action it approved,
    signed by the requester (their reason) at the approval's number and time."""
    requests: dict[int, dict] = {}
    out = []
    for e in entries:
        p = e["payload"] if isinstance(e["payload"], dict) else {}
        if e["action"] == REQUEST:
            requests[e["seq"]] = e
        elif e["action"] == APPROVE and p.get("request") in requests:
            r = requests.pop(p["request"])
            held = r["payload"]
            out.append({**e, "action": held["action"], "target": held["target"], "payload": held["payload"],
                        "operator": r["operator"], "key": r["key"], "reason": r["reason"]})
            continue
        out.append(e)
    return out
