"""Approving and rejecting a held request, as signed actions: their ids, role and words.

Both sign through ``countersign.approve`` and ``countersign.reject`` (an approval
applies the held action in its own transaction, as the requester's action).
"""

from __future__ import annotations

from . import held, roles
from .signed_action import SignedAction

APPROVE = SignedAction(
    held.APPROVE, roles.ADMIN, "Approve a held request", "approve ID",
    summary=lambda done: f"request {done['approved']} ({done['what']}) approved and applied", own_path=True,
    role_note="not its requester",
)
REJECT = SignedAction(
    held.REJECT, roles.ADMIN, "Reject a held request", "reject ID",
    summary=lambda done: f"request {done['rejected']} ({done['what']}) rejected; nothing was applied", own_path=True,
    role_note="its requester too: a withdrawal",
)
