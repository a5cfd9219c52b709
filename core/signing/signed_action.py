"""A signed action, declared once: its audit action, role, plan, apply and words.

Every signed action of the home is one ``SignedAction`` (the table of them is
``console.signed_actions``): its ``id`` is the action name the signed log holds,
``role`` the role it needs, ``plan`` reads the store and says what ``by`` (the
signing operator) would sign (the target and the payload) without writing anything, ``apply`` writes what a
signed entry says through the store's writes, ``lines`` says what the action does
for the preview and ``summary`` says in one line what it did.

``preview`` builds the very fields the action will sign (all but the time, which is
the moment of signing), so a dialog or a prompt can show them first; passing that
preview back to ``sign`` as ``expected`` makes it refuse to sign anything else if
the store moved on in between. ``sign`` is one transaction: the change and its
signed entry commit together, or neither does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, NamedTuple

from core.store.database import write_transaction

from . import audit, countersign, roles
from .keys import ActionError, check_name, short_fingerprint
from .operators import active_operator, load_signer

Plan = Callable[..., tuple[str, dict]]  # (receiver, by, **args) -> (target, payload); reads only
Apply = Callable[..., dict]  # (receiver, payload, entry, at) -> what changed
Lines = Callable[..., list[str]]  # (receiver, payload) -> what the action does, for the preview
Summary = Callable[[dict], str]  # the result -> one line saying what was done


def _no_plan(receiver, by, **args):
    raise ActionError("this action signs through its own command")


def _no_apply(receiver, payload, entry, at):
    return {}


@dataclass(frozen=True)
class SignedAction:
    """One signed action. ``title`` and ``command`` are the docs' words (docs/roles.md);
    an action with ``own_path`` signs through its module's own transaction (an operator's
    key, a held request), not ``sign``; its id, role and words still come from here."""

    id: str  # the audit action, exactly as the signed log writes it
    role: str  # roles.ADMIN, RESOLVER or DISPATCHER
    title: str  # what it does, in the docs' words
    command: str  # the command that signs it
    summary: Summary  # what was done, in one line
    plan: Plan = _no_plan
    apply: Apply = _no_apply
    lines: Lines | None = None  # None: the preview shows the action and its target only
    own_path: bool = False
    role_note: str = ""  # who among the role's holders may sign it, for the docs


class Preview(NamedTuple):
    """What an action will sign: ``fields`` are the signed fields but the time."""

    action: str
    target: str
    operator: str
    fingerprint: str
    reason: str
    payload: dict
    fields: dict
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _lines(action: str, target: str, fields: dict, fingerprint: str, what: list[str]) -> list[str]:
    return [
        *what,
        f"target: {target}; action: {action}",
        f"operator: {fields['operator']} (key {short_fingerprint(fingerprint)})",
        f"reason: {fields['reason']}",
        f"audit entry #{fields['seq']} after head {fields['prev_hash'][:16]}; time: the moment you sign",
    ]


def preview(receiver, action: SignedAction, args: dict, operator: str, reason: str) -> Preview:
    """What ``operator`` would sign for ``action`` with ``args`` now, or a one-line refusal."""
    target, payload = action.plan(receiver, operator, **args)
    row = active_operator(receiver, operator)
    roles.require(receiver, row.name, action.id)
    fields = audit.prepare(receiver, action.id, target, reason, row.name, row.fingerprint, payload)
    fields.pop("at")
    what = action.lines(receiver, payload) if action.lines is not None else []
    return Preview(action.id, target, row.name, row.fingerprint, fields["reason"], payload, fields,
                   _lines(action.id, target, fields, row.fingerprint, what))


def sign(home, receiver, action: SignedAction, args: dict, *, operator: str, passphrase: str | None = None,
         reason: str, now: float | None = None, expected: Preview | None = None, signer=None) -> dict:
    """Check, unlock, then plan, sign and apply in one transaction.

    ``signer`` is a key the operator already unlocked (the console's signing
    session); without it the passphrase unlocks the key for this action only.
    An action ``[signing] countersign`` covers is signed as a request and
    nothing applies: the result is then ``{"pending": ID, ...}`` (``countersign.hold``).
    """
    check_name(operator)
    reason = audit.check_reason(reason)
    action.plan(receiver, operator, **args)  # refuse a bad target before asking the key to unlock
    if signer is not None and signer.name != operator:
        raise ActionError(f"the unlocked key is {signer.name}'s, not {operator}'s")
    active_operator(receiver, operator)
    roles.require(receiver, operator, action.id)  # and a missing role
    hours = countersign.check(home, receiver, operator, action.id)  # and a request nobody could approve
    if signer is None:
        signer = load_signer(home, receiver, operator, passphrase)
    at = time.time() if now is None else float(now)
    with write_transaction(receiver.db):
        active_operator(receiver, operator)  # not retired since the key was unlocked
        target, payload = action.plan(receiver, operator, **args)
        roles.require(receiver, operator, action.id)  # held at this point of the chain
        if expected is not None:
            fields = audit.prepare(receiver, action.id, target, reason, signer.name, signer.fingerprint, payload)
            fields.pop("at")
            if fields != expected.fields:
                raise ActionError("the store changed since this action was shown; review it again before signing")
        if hours is not None:
            return countersign.hold(receiver, signer, action.id, target, reason, payload, hours, now=at)
        entry = audit.append(receiver, signer, action.id, target, reason, payload, now=at)
        result = action.apply(receiver, payload, entry, entry["at"])  # the signed time, which never goes back
    return {"entry": entry, **result}


def signed_words(result: dict, action: SignedAction) -> str:
    """What a signature did, in one line: the action's summary, or the request it made."""
    if "pending" in result:
        return f"waiting for a second admin: request {result['pending']} (`ussd-console approve {result['pending']}`)"
    return action.summary(result)
