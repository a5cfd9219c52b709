"""Resolve one quarantined conflict, signed: keep the first, or accept the correction."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from core import actions
from core.frame import escape_text

from .sign_form import SignForm

LABELS = {
    actions.KEEP_FIRST: "keep the first (dismiss the newcomer; the ledger stays)",
    actions.ACCEPT_CORRECTION: "accept the correction (the ledger takes the newcomer's values)",
}


class ResolveDialog(SignForm):
    SIGN_LABEL = "Sign and resolve"

    def __init__(self, item: dict, action: str, home, **kwargs):
        super().__init__(home, **kwargs)
        if action not in actions.DECISIONS:
            raise ValueError(f"unknown decision {action!r}")
        self.item = item
        self.decision = action
        self.TITLE_TEXT = f"Resolve conflict #{item['id']}: {LABELS[action]}"

    def extra_fields(self) -> ComposeResult:
        yield Static(Text(f"{escape_text(self.item['first_frame_id'], 64)} first: "
                          f"{escape_text(self.item['first_text'], 64)}\n"
                          f"{escape_text(self.item['frame_id'], 64)} newcomer: "
                          f"{escape_text(self.item['frame_text'], 64)}"), id="sign-subject")

    def describe(self, receiver, operator, reason, values):
        return actions.describe_resolve(receiver, self.item["id"], self.decision, operator, reason)

    def sign(self, receiver, operator, passphrase, reason, preview, values) -> str:
        done = actions.resolve(self.home, receiver, self.item["id"], self.decision, operator=operator,
                               passphrase=passphrase, reason=reason, expected=preview)
        return f"conflict #{done['quarantine_id']}: {done['status']} (audit entry #{done['entry']['seq']})"
