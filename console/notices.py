"""What the console tells the operator unasked: a conflict held, a file rejected, an inbox fault.

Each is a notification and a bell wherever the operator is, never only a log line or a count.
The refresh engine hands over what each probe found; ``Notices`` remembers the newest it has
told (a conflict's id, a rejected file's finish time), so each is told once, and the first
probe after the start only sets the marks: what was there before the console opened is on
its screens, not in a burst of notes.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import TabbedContent

from core.i18n import _, ngettext
from core.inbox.faults import FILES_RETRIED
from core.rules.text import escape_text
from core.store.records import Conflict, InboxFile

from .panels import QuarantinePanel
from .ui_text import count

NOTIFY_AT_MOST = 3  # notifications per kind and refresh; the rest are summed up in one


class Notices:
    def __init__(self, app):
        self.app = app
        self._conflict_mark: int | None = None
        self._rejected_mark: float | None = None

    def fault(self, before: dict | None, now: dict | None) -> None:
        """Tell the operator when an inbox fault starts and when it clears (the header keeps the mark)."""
        was = (before or {}).get("last_error")
        fault = (now or {}).get("last_error")
        if fault and fault != was:
            cause = fault.removesuffix(f"; {FILES_RETRIED}")  # a store or disk fault says it too: say it once
            self.app.notify(_("Inbox fault: %(cause)s. Files wait in the inbox; "
                              "it resumes by itself when the fault clears.", cause=escape_text(cause, 200)),
                            title=_("Inbox"), severity="error", timeout=15, markup=False)
            self.app.bell()
        elif was and not fault:
            self.app.notify(_("Inbox fault cleared; delivery resumed."), title=_("Inbox"), markup=False)

    def conflicts(self, newest: list[Conflict], open_count: int) -> None:
        """A new conflict raises a notification and a bell; the Quarantine tab counts the open ones."""
        tab = self.app.query_one(TabbedContent).get_tab(QuarantinePanel.TAB_ID)
        label = Text(f"3 {_(QuarantinePanel.TITLE)}")
        if open_count:
            label.append(f" !{count(open_count)}", style="bold")
        tab.label = label
        top = max((q.id for q in newest), default=0)
        if self._conflict_mark is None:
            self._conflict_mark = top
            return
        fresh = [q for q in newest if q.id > self._conflict_mark]
        self._conflict_mark = max(self._conflict_mark, top)
        if not fresh:
            return
        self.app.bell()
        for q in fresh[:NOTIFY_AT_MOST]:
            self.app.notify(
                _("%(frame_id)s: %(new)s differs from %(first)s. Held for review; press 3 (d hides notes).",
                  frame_id=escape_text(q.frame_id, 64), new=escape_text(q.frame_text, 40),
                  first=escape_text(q.ledger_text or q.first_text, 40)),
                title=_("! Conflict held"), severity="warning", timeout=8, markup=False,
            )
        if len(fresh) > NOTIFY_AT_MOST:
            more = len(fresh) - NOTIFY_AT_MOST
            self.app.notify(ngettext("and %(n)s more new conflict; press 3.", "and %(n)s more new conflicts; press 3.",
                                     more, n=count(more)),
                            title=_("! Conflicts"), severity="warning", timeout=8, markup=False)

    def rejected_files(self, newest: list[InboxFile]) -> None:
        """A file rejected whole (by this console's inbox or another receiver on the store)."""
        top = max((f.finished_at or 0 for f in newest), default=0)
        if self._rejected_mark is None:
            self._rejected_mark = top
            return
        fresh = [f for f in newest if (f.finished_at or 0) > self._rejected_mark]
        self._rejected_mark = max(self._rejected_mark, top)
        if not fresh:
            return
        self.app.bell()
        for f in fresh[:NOTIFY_AT_MOST]:
            self.app.notify(_("%(file)s: %(reason)s. Kept in rejected/; press 5.", file=escape_text(f.name, 64),
                              reason=escape_text(f.reason, 160)),
                            title=_("! File rejected"), severity="warning", timeout=15, markup=False)
        if len(fresh) > NOTIFY_AT_MOST:
            more = len(fresh) - NOTIFY_AT_MOST
            self.app.notify(ngettext("and %(n)s more rejected file; press 5.", "and %(n)s more rejected files; press 5.",
                                     more, n=count(more)),
                            title=_("! Files rejected"), severity="warning", timeout=15, markup=False)
