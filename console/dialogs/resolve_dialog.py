"""Resolve one quarantined conflict, signed: keep the first, or accept the correction."""

from __future__ import annotations

from core.rules.words import resolution_words
from core.signing import actions, roles
from core.store.records import Conflict

from .sign_form import SignForm

LABELS = {
    actions.KEEP_FIRST: "keep the first",
    actions.ACCEPT_CORRECTION: "accept the correction",
}


class ResolveDialog(SignForm):
    SIGN_LABEL = "Sign and resolve"
    ROLE = roles.RESOLVER

    def __init__(self, item: Conflict, action: str, home, **kwargs):
        super().__init__(home, **kwargs)
        if action not in actions.DECISIONS:
            raise ValueError(f"unknown decision {action!r}")
        self.item = item
        self.decision = action
        # The preview below shows the first and the newcomer in full.
        self.TITLE_TEXT = f"Resolve conflict #{item.id}: {LABELS[action]}"

    def describe(self, receiver, operator, reason, values):
        return actions.describe_resolve(receiver, self.item.id, self.decision, operator, reason)

    def sign(self, receiver, operator, signer, reason, preview, values) -> str:
        done = actions.resolve(self.home, receiver, self.item.id, self.decision, operator=operator,
                               signer=signer, reason=reason, expected=preview)
        return (f"conflict #{done['quarantine_id']}: {resolution_words(done['status'])} "
                f"(audit entry #{done['entry']['seq']})")
