"""Change the retention policy, signed; below 30 days it is the exception R7 asks for."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Label, Static

from core.i18n import N_, _
from core.rules.retention import describe
from core.signing import actions

from .sign_form import SignForm


class ExceptionDialog(SignForm):
    """Its one form field: the new retention in whole days."""

    FIRST_FIELD = "#days"

    def __init__(self, policy: dict, home, **kwargs):
        super().__init__(home, actions.RETENTION,
                         title=N_("Retention: sign a change (below 30 days it is an exception; below 3 days refused)"),
                         sign_label=N_("Sign the change"), **kwargs)
        self.policy = policy

    def extra_fields(self) -> ComposeResult:
        yield Static(Text(_("in force: %(policy)s", policy=describe(self.policy["retention_seconds"]))),
                     id="sign-subject")
        with Horizontal(classes="field"):
            yield Label(_("Days"))
            yield Input(placeholder=_("new retention in whole days, e.g. 10"), id="days", type="integer",
                        max_length=5, compact=True)

    def form_values(self) -> dict:
        value = self.query_one("#days", Input).value.strip()
        return {"days": int(value) if value.isdigit() else None}

    def plan_args(self, values: dict) -> dict:
        if values.get("days") is None:
            raise ValueError(_("give the new retention in whole days"))
        return {"days": values["days"]}

    @on(Input.Changed, "#days")
    def _days_changed(self) -> None:
        self.refresh_preview()
