"""Change the retention policy, signed; below 30 days it is the exception R7 asks for."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Label, Static

from core.rules.retention import describe
from core.signing import actions, roles

from .sign_form import SignForm


class ExceptionDialog(SignForm):
    TITLE_TEXT = "Retention: sign a change (below 30 days it is an exception; below 3 days refused)"
    SIGN_LABEL = "Sign the change"
    ROLE = roles.ADMIN
    FIRST_FIELD = "#days"

    def __init__(self, policy: dict, home, **kwargs):
        super().__init__(home, **kwargs)
        self.policy = policy

    def extra_fields(self) -> ComposeResult:
        yield Static(Text(f"in force: {describe(self.policy['retention_seconds'])}"), id="sign-subject")
        with Horizontal(classes="field"):
            yield Label("Days")
            yield Input(placeholder="new retention in whole days, e.g. 10", id="days", type="integer",
                        max_length=5, compact=True)

    def form_values(self) -> dict:
        value = self.query_one("#days", Input).value.strip()
        return {"days": int(value) if value.isdigit() else None}

    @on(Input.Changed, "#days")
    def _days_changed(self) -> None:
        self.refresh_preview()

    def describe(self, receiver, operator, reason, values):
        days = values.get("days")
        if days is None:
            raise ValueError("give the new retention in whole days")
        return actions.describe_retention(receiver, days, operator, reason)

    def sign(self, receiver, operator, signer, reason, preview, values) -> str:
        days = values["days"]
        done = actions.set_retention(self.home, receiver, days, operator=operator, signer=signer,
                                     reason=reason, expected=preview)
        if "pending" in done:  # [signing] countersign: held until another admin approves it
            return f"waiting for a second admin: request {done['pending']} (`ussd-console approve {done['pending']}`)"
        policy = done["retention"]
        kind = "signed exception" if policy["is_exception"] else "policy"
        return f"retention now {describe(policy['retention_seconds'])} ({kind}; audit entry #{done['entry']['seq']})"
