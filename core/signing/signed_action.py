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

from core.i18n import N_, _
from core.rules.text import Said, plain
from core.store.database import write_transaction

from . import audit, countersign, roles
from .keys import ActionError, check_name, short_fingerprint
from .operators import active_operator, load_signer

Plan = Callable[..., tuple[str, dict]]  # (receiver, by, **args) -> (target, payload); reads only
Apply = Callable[..., dict]  # (receiver, payload, entry, at) -> what changed
Lines = Callable[..., list[str]]  # (receiver, payload) -> what the action does, for the preview
Summary = Callable[[dict], str]  # the result -> one line saying what was done
What = Callable[[dict], str]  # a payload -> the action in one line: a held request's words
Recheck = Callable[..., "str | None"]  # (receiver, payload, request) -> why a held payload no longer fits
SignsItself = Callable[..., bool]  # (receiver, by, **args) -> whether ``by`` is the operator it registers


@dataclass(frozen=True)
class SignedAction:
    """One signed action. ``title`` and ``command`` are the docs' words (docs/roles.md).

    An action ``[signing] countersign`` can hold also says in one line what a held
    request would do (``what``) and why a held payload no longer fits the store when a
    second admin approves it (``recheck``); ``what`` is English, as ``--json`` keeps it, and
    ``said`` is the same line in the operator's language, for the preview of a decision on it.
    ``signs_itself`` is for the one action whose signer is not registered yet: the first
    operator of a home signs their own ``operator.add`` with the key the action registers, so
    that key holds no role yet."""

    id: str  # the audit action, exactly as the signed log writes it
    role: str  # roles.ADMIN, RESOLVER or DISPATCHER
    title: str  # what it does, in the docs' words
    command: str  # the command that signs it
    summary: Summary  # what was done, in one line
    plan: Plan
    apply: Apply
    lines: Lines  # what the action does, above the preview's target, signer and reason
    role_note: str = ""  # who among the role's holders may sign it, for the docs
    what: What | None = None
    said: What | None = None
    recheck: Recheck | None = None
    signs_itself: SignsItself | None = None

    def itself(self, receiver, by: str, args: dict) -> bool:
        """Whether ``by`` signs with the key this very action registers (no row, no role yet)."""
        return self.signs_itself is not None and self.signs_itself(receiver, by, **args)


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
    """The preview's frame in the operator's words; the action id, the target and every value stay
    as signed (what a signature covers is ``fields``, never these lines). Outside text is made
    ``plain`` here, in every action's lines too, so the lines are shown as they are."""
    return [
        *what,
        _("target: %(target)s; action: %(action)s", target=plain(target), action=action),
        _("operator: %(operator)s (key %(key)s)", operator=plain(fields["operator"]),
          key=short_fingerprint(fingerprint)),
        _("reason: %(reason)s", reason=plain(fields["reason"], 300)),
        _("audit entry #%(seq)s after head %(head)s; time: the moment you sign", seq=fields["seq"],
          head=fields["prev_hash"][:16]),
    ]


def preview(receiver, action: SignedAction, args: dict, operator: str, reason: str) -> Preview:
    """What ``operator`` would sign for ``action`` with ``args`` now, or a one-line refusal."""
    target, payload = action.plan(receiver, operator, **args)
    if action.itself(receiver, operator, args):
        fingerprint = payload["fingerprint"]  # the key the action registers signs it
    else:
        fingerprint = active_operator(receiver, operator).fingerprint
        roles.require(receiver, operator, action.id)
    fields = audit.prepare(receiver, action.id, target, reason, operator, fingerprint, payload)
    fields.pop("at")
    return Preview(action.id, target, operator, fingerprint, fields["reason"], payload, fields,
                   [Said(line) for line in _lines(action.id, target, fields, fingerprint,
                                                  action.lines(receiver, payload))])


def sign(home, receiver, action: SignedAction, args: dict, *, operator: str, passphrase: str | None = None,
         reason: str, now: float | None = None, expected: Preview | None = None, signer=None) -> dict:
    """Check, unlock, then plan, sign and apply in one transaction.

    ``signer`` is a key the operator already unlocked (the console's signing
    session); without it the passphrase unlocks the key for this action only.
    An action that ``signs_itself`` is given the key it registers as ``signer``.
    An action ``[signing] countersign`` covers is signed as a request and
    nothing applies: the result is then ``{"pending": ID, ...}`` (``countersign.hold``).
    """
    check_name(operator)
    reason = audit.check_reason(reason)
    action.plan(receiver, operator, **args)  # refuse a bad target before asking the key to unlock
    if signer is not None and signer.name != operator:
        raise ActionError(N_("the unlocked key is %(signer)s's, not %(operator)s's"), signer=signer.name, operator=operator)
    itself = action.itself(receiver, operator, args)
    if itself and signer is None:
        raise ActionError(N_("%(action)s by %(operator)s signs with the key it registers: give it as the signer"),
                          action=action.id, operator=operator)
    hours = None
    if not itself:
        active_operator(receiver, operator)
        roles.require(receiver, operator, action.id)  # and a missing role
        hours = countersign.check(home, receiver, operator, action.id)  # and a request nobody could approve
    if signer is None:
        signer = load_signer(home, receiver, operator, passphrase)
    at = time.time() if now is None else float(now)
    with write_transaction(receiver.db):
        if not itself:
            active_operator(receiver, operator)  # not retired since the key was unlocked
        target, payload = action.plan(receiver, operator, **args)  # refuses a self-signed add once one exists
        if not itself:
            roles.require(receiver, operator, action.id)  # held at this point of the chain
        if expected is not None:
            fields = audit.prepare(receiver, action.id, target, reason, signer.name, signer.fingerprint, payload)
            fields.pop("at")
            if fields != expected.fields:
                raise ActionError(N_("the store changed since this action was shown; review it again before signing"))
        if hours is not None:
            return countersign.hold(receiver, signer, action.id, target, reason, payload, hours, now=at)
        entry = audit.append(receiver, signer, action.id, target, reason, payload, now=at)
        result = action.apply(receiver, payload, entry, entry["at"])  # the signed time, which never goes back
    return {"entry": entry, **result}


def signed_words(result: dict, action: SignedAction) -> str:
    """What a signature did, in one line: the action's summary, or the request it made."""
    if "pending" in result:
        command = f"`ussd-console approve {result['pending']}`"
        return Said(_("waiting for a second admin: request %(id)s (%(command)s)", id=result["pending"], command=command))
    return action.summary(result)
