"""Mark a case dispatched, served, closed or open again, signed (docs/rules.md#carrying-a-case-to-done)."""

from __future__ import annotations

from core.i18n import N_, _
from core.rules.text import escape_text
from core.signing import marks
from core.store.records import Case, RankedCase

from .sign_form import SignForm

# The dialog's title per status, whole (core.signing.marks.STATUS_WORDS in the operator's words).
TITLES = {
    "dispatched": N_("Mark case %(case)s dispatched (a team is on its way)"),
    "served": N_("Mark case %(case)s served (aid delivered)"),
    "closed": N_("Mark case %(case)s closed (no action needed; say why)"),
    "open": N_("Mark case %(case)s open again (back into the ranking)"),
}


class MarkDialog(SignForm):
    """No form field of its own: the case and the status come from the key pressed."""

    def __init__(self, case: Case | RankedCase, status: str, home, **kwargs):
        if status not in marks.STATUS_WORDS:
            raise ValueError(f"unknown status {status!r}")
        super().__init__(home, marks.MARK, {"frame_id": case.frame_id, "status": status},
                         title=_(TITLES[status], case=escape_text(case.frame_id, 64)),
                         sign_label=N_("Sign the mark"), **kwargs)
        self.case = case
        self.status = status
