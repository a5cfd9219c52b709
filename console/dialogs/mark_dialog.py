"""Mark a case dispatched, served, closed or open again, signed (docs/rules.md#carrying-a-case-to-done)."""

from __future__ import annotations

from core.rules.text import escape_text
from core.signing import marks, roles
from core.store.records import Case, RankedCase

from .sign_form import SignForm

WORDS = {
    "dispatched": "dispatched (a team is on its way)",
    "served": "served (aid delivered)",
    "closed": "closed (no action needed; say why)",
    "open": "open again (back into the ranking)",
}


class MarkDialog(SignForm):
    SIGN_LABEL = "Sign the mark"
    ROLE = roles.DISPATCHER

    def __init__(self, case: Case | RankedCase, status: str, home, **kwargs):
        super().__init__(home, **kwargs)
        if status not in WORDS:
            raise ValueError(f"unknown status {status!r}")
        self.case = case
        self.status = status
        self.TITLE_TEXT = f"Mark case {escape_text(case.frame_id, 64)} {WORDS[status]}"

    def describe(self, receiver, operator, reason, values):
        return marks.describe_mark(receiver, self.case.frame_id, self.status, operator, reason)

    def sign(self, receiver, operator, signer, reason, preview, values) -> str:
        done = marks.mark_case(self.home, receiver, self.case.frame_id, self.status, operator=operator,
                               signer=signer, reason=reason, expected=preview)
        return f"case {done['frame_id']}: {done['from']} -> {done['status']} (audit entry #{done['entry']['seq']})"
