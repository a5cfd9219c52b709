"""Resolve one quarantined conflict, signed: keep the first, or accept the correction."""

from __future__ import annotations

from core.i18n import N_, _
from core.signing import actions
from core.store.records import Conflict

from .sign_form import SignForm

LABELS = {
    actions.KEEP_FIRST: N_("Resolve conflict #%(id)s: keep the first"),
    actions.ACCEPT_CORRECTION: N_("Resolve conflict #%(id)s: accept the correction"),
}


class ResolveDialog(SignForm):
    """No form field of its own: the preview shows the first and the newcomer in full."""

    def __init__(self, item: Conflict, action: str, home, **kwargs):
        if action not in actions.DECISIONS:
            raise ValueError(f"unknown decision {action!r}")
        super().__init__(home, actions.resolution(action), {"quarantine_id": item.id},
                         title=_(LABELS[action], id=item.id), sign_label=N_("Sign and resolve"),
                         **kwargs)
        self.item = item
        self.decision = action
