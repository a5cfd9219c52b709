"""Mark a case dispatched, served, closed or open again, signed (docs/rules.md#carrying-a-case-to-done)."""

from __future__ import annotations

from core.rules.text import escape_text
from core.signing import marks
from core.store.records import Case, RankedCase

from .sign_form import SignForm


class MarkDialog(SignForm):
    """No form field of its own: the case and the status come from the key pressed."""

    def __init__(self, case: Case | RankedCase, status: str, home, **kwargs):
        if status not in marks.STATUS_WORDS:
            raise ValueError(f"unknown status {status!r}")
        said, meaning = marks.STATUS_WORDS[status]
        super().__init__(home, marks.MARK, {"frame_id": case.frame_id, "status": status},
                         title=f"Mark case {escape_text(case.frame_id, 64)} {said} ({meaning})",
                         sign_label="Sign the mark", **kwargs)
        self.case = case
        self.status = status
