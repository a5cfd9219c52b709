"""Quarantine: open conflicts, the case as the ledger holds it now and the newcomer side by side
(the ledger's side is the first version unless a correction was accepted on the case since).

Differing fields are marked with ``≠`` and a reverse style, so the difference
reads without colour. The resolve keys open the signing dialog when one is
posts a request the app answers with its signing dialog; this panel never changes the store itself.
``t`` lists resolved conflicts too (with who settled them); Enter opens the
history of the case a conflict concerns.
"""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text
from textual import on
from textual.widgets import DataTable, Static

from core.i18n import _, N_, ngettext
from console.render import assembled, safe
from console.ui_text import PRI, count, need, number, reason, stamp
from console.widgets.keyed_table import KeyedTable
from core.rules.frame import Frame, parse
from core.rules.words import resolution_words
from core.store.records import Conflict

from console import actions
from console.messages import OpenCase, ResolveRequest

from .panel import PAGE, InfoLine, Page, Panel, window_text

COLUMNS = [
    ("id", N_("#")),
    ("frame_id", N_("frame id")),
    ("reason", N_("reason")),
    ("seen", N_("seen")),
    ("last_seen", N_("last seen")),
    ("status", N_("status")),
]
FIELDS = [  # (key, label): the label is shown in the operator's language
    ("frame_id", N_("frame id"), lambda f, fid: fid),
    ("seq", N_("place in session"), lambda f, fid: f.seq if f else None),
    ("site", N_("site"), lambda f, fid: f.site if f else None),
    ("need", N_("need"), lambda f, fid: f.need if f else None),
    ("headcount", N_("people"), lambda f, fid: f.headcount if f else None),
    ("pri", PRI, lambda f, fid: f.pri if f else None),
    ("checksum", N_("checksum"), lambda f, fid: f.text[-2:] if f else None),
]


def _frame(frame_id: str, text: str) -> Frame | None:
    parsed = parse(frame_id, text)
    return parsed if isinstance(parsed, Frame) else None


def left_side(item: Conflict) -> tuple[str, str, str]:
    """What the newcomer is compared with: the case as the ledger holds it now (an accepted
    correction may have changed it since the conflict was raised), else the recorded first."""
    if item.ledger_text is not None:
        return N_("ledger now"), item.ledger_frame_id, item.ledger_text
    return N_("first (applied)"), item.first_frame_id, item.first_text


def compare(item: Conflict) -> Table:
    """The ledger's version and the newcomer (held) field by field; ``≠`` marks a difference."""
    side, left_id, left_text = left_side(item)
    first = _frame(left_id, left_text)
    newcomer = _frame(item.frame_id, item.frame_text)
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), expand=False, show_edge=False, pad_edge=False)
    table.add_column("", width=1)
    table.add_column(_("field"))
    # A frame is never cut: its columns are as wide as the longer frame (a header wraps in them), and
    # where that leaves too little room the field labels wrap.
    left_frame, new_frame = safe(left_text, 40), safe(item.frame_text, 40)
    frames = max(left_frame.cell_len, new_frame.cell_len)
    table.add_column(_(side), width=frames)
    table.add_column(_("new version (held)"), width=frames)
    for key, label, get in FIELDS:
        a = get(first, left_id)
        b = get(newcomer, item.frame_id)
        differs = a != b
        style = "bold reverse" if differs else ""
        show = need if key == "need" else safe
        cell_a = show(a) if a is not None else safe(None)
        cell_b = show(b) if b is not None else safe(None)
        cell_a.stylize(style)
        cell_b.stylize(style)
        table.add_row(Text("≠" if differs else " ", style="bold"), Text(_(label)), cell_a, cell_b)
    table.add_row(Text(" "), Text(_("frame")), left_frame, new_frame)
    return table


def summary(item: Conflict) -> Text:
    out = Text(f"#{item.id} ", style="bold")
    out.append_text(reason(item.reason))
    out.append(" | ")
    # The template as the count's plural form has it; its parts filled in by ``assembled``.
    seen = ngettext("seen %(times)sx, first %(first)s, last %(last)s via %(path)s",
                    "seen %(times)sx, first %(first)s, last %(last)s via %(path)s", item.seen_count)
    out.append_text(assembled(seen,
                              times=count(item.seen_count), first=stamp(item.first_seen),
                              last=stamp(item.last_seen), path=safe(item.source, 16)))
    return out


class QuarantinePanel(Panel):
    TAB_ID = "quarantine"
    TITLE = N_("Quarantine")
    EXPORT_VIEW = "quarantine"
    BINDINGS = actions.bindings(TAB_ID)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.items: dict[str, Conflict] = {}
        self.show_resolved = False

    def compose(self):
        yield InfoLine(id="quarantine-info")
        yield KeyedTable(COLUMNS, id="quarantine-table")
        yield Static(id="quarantine-detail")

    def params(self):
        return (self.page_offset, self.show_resolved)

    @staticmethod
    def load(receiver, params, now) -> Page:
        offset, resolved = params
        status = None if resolved else "open"
        return Page(receiver.quarantine(status=status, limit=PAGE, offset=offset), receiver.count_quarantine(status))

    def show(self, data: Page) -> None:
        rows = data.rows
        self.total = data.total
        self.items = {str(q.id): q for q in rows}
        self.query_one(KeyedTable).sync([
            (str(q.id), (
                number(q.id), safe(q.frame_id, 64), reason(q.reason), number(q.seen_count), Text(stamp(q.last_seen)),
                safe(resolution_words(q.status, short=True), 40, style="bold" if q.status == "open" else ""),
            ))
            for q in rows
        ])
        # One line at 80 columns, whatever the counts: with resolved ones too, t's way back is the hint.
        info = window_text(self.page_offset, len(rows), self.total, N_("conflicts") if self.show_resolved
                           else N_("open conflicts"))
        if self.show_resolved:
            info.append(_(", resolved too | t: open only"), style="dim")
        elif self.total:
            info.append(" | " + _("the first version stays until signed"), style="dim")
        self.query_one("#quarantine-info", InfoLine).update(info)
        self._show_detail()

    def selected(self) -> Conflict | None:
        key = self.query_one(KeyedTable).cursor_key
        return self.items.get(key) if key is not None else None

    def _show_detail(self) -> None:
        item = self.selected()
        detail = self.query_one("#quarantine-detail", Static)
        if item is None:
            detail.update(Text(_("No open conflicts. A conflict is a frame that disagrees with what was "
                                 "applied first; it waits here for an operator."), style="dim"))
            return
        out = Table.grid()
        out.add_row(summary(item))
        out.add_row(compare(item))
        if item.status != "open":
            out.add_row(assembled(_("resolved: %(how)s by %(operator)s at %(when)s"),
                                  how=safe(resolution_words(item.status, short=True), 40),
                                  operator=safe(item.resolved_by, 32), when=stamp(item.resolved_at)))
        out.add_row(Text(_("≠ differs | k keep first, a accept correction (signed) | Enter: the case"), style="dim"))
        detail.update(out)

    @on(DataTable.RowHighlighted, "#quarantine-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail()

    # -- actions ---------------------------------------------------------------------
    def action_toggle_resolved(self) -> None:
        self.show_resolved = not self.show_resolved
        self.page_offset = 0
        self.request_refresh()

    @on(DataTable.RowSelected, "#quarantine-table")
    def _open(self, event: DataTable.RowSelected) -> None:
        item = self.items.get(event.row_key.value)
        if item is not None:
            self.post_message(OpenCase(case_key=item.case_key))

    def action_history(self) -> None:
        item = self.selected()
        self.post_message(OpenCase(case_key=item.case_key) if item else OpenCase())

    def action_resolve(self, action: str) -> None:
        self.post_message(ResolveRequest(self.selected(), action))
