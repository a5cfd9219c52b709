"""Approving and rejecting a held request, as signed actions (``SignedAction``).

Both sign through ``signed_action.sign`` like every other action: the plan
refuses a decision its signer may not make (``countersign.decide_check``) and
binds the entry to the request's number and hash. An approval's apply writes
the held action through that action's own ``apply``, as the requester's action
(their name and reason) at the approval's number and time; what a request would
do is the held action's ``what``. The held actions' entries live above this
package (a gateway's, for one), so the table of signed actions hands each
decision a lookup from an action's id to its entry (``approving``, ``rejecting``).
"""

from __future__ import annotations

from typing import Callable

from core.i18n import N_, _
from core.rules.text import Said, Twofold, plain

from . import countersign, held, roles
from .keys import ActionError
from .signed_action import SignedAction

Lookup = Callable[[str], SignedAction]  # an action's id -> its entry in the table of signed actions
# An approved operator change says who and their roles now, as it always has.
_OPERATOR_CHANGES = ("operator.add", "operator.retire", roles.OPERATOR_GRANT, roles.OPERATOR_REVOKE)


def _bound(request: held.Request) -> tuple[str, dict]:
    return f"request:{request.seq}", {"request": request.seq, "request_hash": request.hash}


def _request(receiver, payload: dict) -> held.Request:
    return countersign.requests(receiver)[payload["request"]]


def _words(lookup: Lookup, verb: str):
    def lines(receiver, payload: dict) -> list[str]:
        request = _request(receiver, payload)
        about = {"id": request.seq, "operator": plain(request.operator),
                 "what": countersign.said(request, lookup(request.action))}
        first = (_("approve request %(id)s by %(operator)s: %(what)s", **about) if verb == "approve"
                 else _("reject request %(id)s by %(operator)s: %(what)s", **about))
        return [first, _("their reason: %(reason)s", reason=plain(request.reason, 300))]

    return lines


def _decided(request: held.Request, lookup: Lookup, key: str) -> dict:
    """The decided request as ``--json`` shows it; its ``what`` is English there and said in the
    operator's language in the summary line."""
    action = lookup(request.action)
    return {key: request.seq, "action": request.action,
            "what": Twofold(countersign.what(request, action), lambda: countersign.said(request, action)),
            "requested_by": request.operator}


def _what(done: dict) -> str:
    what = done["what"]
    return Said(what.words()) if isinstance(what, Twofold) else plain(what, 300)


def approving(lookup: Lookup) -> SignedAction:
    """``countersign.approve``: another admin's approval; the held action applies with it."""

    def plan(receiver, by, request_id) -> tuple[str, dict]:
        request = countersign.decide_check(receiver, request_id, by, "approve")
        countersign.refuse_unfit(receiver, request, lookup(request.action))
        return _bound(request)

    def apply(receiver, payload: dict, entry: dict, at: float) -> dict:
        request = _request(receiver, payload)
        if request.expired(at):
            raise ActionError(N_("request #%(id)s expired while it was being approved"), id=request.seq)
        effect = {"seq": entry["seq"], "at": at, "operator": request.operator, "reason": request.reason}
        done = lookup(request.action).apply(receiver, request.payload, effect, at)
        if request.action in _OPERATOR_CHANGES:
            done = {"name": done["name"], "roles": done["roles"]}
        return {**_decided(request, lookup, "approved"), **done}

    return SignedAction(
        held.APPROVE, roles.ADMIN, "Approve a held request", "approve ID",
        summary=lambda done: Said(_("request %(id)s (%(what)s) approved and applied", id=done["approved"],
                                    what=_what(done))),
        plan=plan, apply=apply, lines=_words(lookup, "approve"), role_note="not its requester",
    )


def rejecting(lookup: Lookup) -> SignedAction:
    """``countersign.reject``: a waiting request closed with no effect (any admin, its requester
    too: a withdrawal). A held operator's key file is set aside afterwards (``countersign.set_aside``)."""

    def plan(receiver, by, request_id) -> tuple[str, dict]:
        return _bound(countersign.decide_check(receiver, request_id, by, "reject"))

    def apply(receiver, payload: dict, entry: dict, at: float) -> dict:
        return _decided(_request(receiver, payload), lookup, "rejected")

    return SignedAction(
        held.REJECT, roles.ADMIN, "Reject a held request", "reject ID",
        summary=lambda done: Said(_("request %(id)s (%(what)s) rejected; nothing was applied", id=done["rejected"],
                                    what=_what(done))),
        plan=plan, apply=apply, lines=_words(lookup, "reject"), role_note="its requester too: a withdrawal",
    )
