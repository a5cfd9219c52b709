"""A case's history (Enter on a case): its values, status, versions, marks, open and resolved conflicts.

Read on the store thread, drawn as plain tables; every value from outside is
escaped. The mark keys work here too; the screen reads the case again when a
signing dialog over it closes.
"""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.table import Table
from rich.text import Text
from textual import work
from textual.binding import Binding

from core.i18n import N_, _, ngettext, number
from core.rules.text import said
from console import actions
from console.messages import MarkRequest
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from console.render import safe
from console.ui_text import PRI, need, reason, stamp, status
from core.rules.words import resolution_words
from core.signing.case_story import case_story
from core.signing.keys import ActionError
from core.store.records import Case
from console.widgets.words_footer import WordsFooter


def _table(title: str, columns: list[str]) -> Table:
    t = Table(title=_(title), title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1),
              show_edge=False, pad_edge=False, expand=False)
    for col in columns:
        t.add_column(_(col), overflow="fold")
    return t


def render_story(story: dict) -> list:
    case = story["case"]
    head = Text(_("Case") + " ", style="bold")
    head.append_text(safe(case["frame_id"], 64, style="bold"))
    head.append("  " + _("status") + " ")
    head.append_text(status(case["status"], case["disputed"]))
    now = Text(_("now:") + " ")
    now.append_text(safe(case["site"], 8))
    now.append(" ")
    now.append_text(need(case["need"]))
    now.append(", " + _("%(people)s, %(pri_word)s %(pri)s, version %(version)s",
                        people=ngettext("%(n)s person", "%(n)s people", case["headcount"], n=number(case["headcount"])),
                        pri_word=_(PRI), pri=case["pri"], version=case["version"]))
    versions = _table(N_("Versions"), [N_("v"), N_("frame id"), N_("people"), PRI, N_("when"), N_("how")])
    for v in story["versions"]:
        how = Text(_("applied via") + " ") + safe(v.get("path"), 16) if v["how"] == "applied" else (
            Text(_("correction #%(id)s accepted by", id=v["quarantine_id"]) + " ") + safe(v.get("by"), 32)
            + Text(": ") + safe(v.get("reason") or "-", 60))
        versions.add_row(str(v["version"]), safe(v["frame_id"], 40), str(v["headcount"]), str(v["pri"]),
                         stamp(v["at"]), how)
    marks = _table(N_("Status marks"), [N_("when"), N_("from"), N_("to"), N_("by"), N_("reason")])
    for mk in story["marks"]:
        marks.add_row(stamp(mk["at"]), mk["from"], Text(mk["to"], style="bold"), safe(mk["by"], 32),
                      safe(mk["reason"], 80))
    parts: list = [head, now, Text(""), versions, Text("")]
    parts.append(marks if story["marks"] else Text(_("Status marks: none (open since it arrived)"), style="dim"))
    parts.append(Text(""))
    if story["open_conflicts"]:
        conflicts = _table(N_("Open conflicts (the case is disputed until an operator resolves them)"),
                           [N_("#"), N_("frame id"), N_("new version"), N_("reason")])
        for q in story["open_conflicts"]:
            conflicts.add_row(str(q["id"]), safe(q["frame_id"], 40), safe(q["frame_text"], 40), reason(q["reason"]))
        parts.append(conflicts)
    else:
        parts.append(Text(_("Open conflicts: none"), style="dim"))
    parts.append(Text(""))
    parts.append(resolved_table(story.get("resolved_conflicts") or []))
    return parts


def resolved_table(rows: list[dict]):
    """The case's decided conflicts: a decision stays on the case's history after it leaves Quarantine."""
    if not rows:
        return Text(_("Resolved conflicts: none"), style="dim")
    resolved = _table(N_("Resolved conflicts"), [N_("#"), N_("decision"), N_("version kept"), N_("by"), N_("when"),
                                                 N_("audit entry")])
    for q in rows:
        resolved.add_row(str(q["id"]), resolution_words(q["status"]), safe(q["kept_text"] or "-", 40),
                         safe(q["by"], 32), stamp(q["at"]),
                         Text(f"#{q['audit_seq']}: ") + safe(q["audit_reason"] or "-", 60)
                         if q["audit_seq"] is not None else Text("-"))
    return resolved


class CaseScreen(ModalScreen[None]):
    CSS_PATH = Path(__file__).with_name("case_screen.tcss")
    BINDINGS = [
        Binding("escape,q", "close", N_("Close")),
        *actions.bindings("case"),
    ]

    def __init__(self, case_id: int | None = None, case_key: str | None = None):
        super().__init__()
        self.case_id = case_id
        self.case_key = case_key
        self.story: dict | None = None

    def compose(self):
        with Vertical(id="case-box"):
            with VerticalScroll(id="case-scroll"):
                yield Static(Text(_("reading the case..."), style="dim"), id="case-body")
            keymap = getattr(self.app, "keymap", {})
            marks = ", ".join(f"{actions.key_label(actions.keys_of(a, keymap))} {_(a.description).lower()}"
                              for a in actions.in_scope("case"))
            yield Static(Text(_("Esc closes | %(marks)s (signed)", marks=marks), style="dim"), id="case-keys")
        yield WordsFooter()  # the case screen's own keys, not the screen's under it

    def on_mount(self) -> None:
        self.query_one("#case-box").border_title = _("case history")
        self.load()

    def on_screen_resume(self) -> None:
        if self.story is not None:
            self.load()  # a signing dialog over this screen may have changed the case

    @work(exclusive=True, group="case")
    async def load(self) -> None:
        body = self.query_one("#case-body", Static)
        try:
            story = await self.app.view.run(lambda r: case_story(r, case_id=self.case_id, case_key=self.case_key))
        except ActionError as exc:
            body.update(Text(_("Cannot show the case: %(error)s", error=said(exc))))
            return
        self.story = story
        self.case_id = story["case"]["id"]
        grid = Table.grid()
        for part in render_story(story):
            grid.add_row(part)
        body.update(grid)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_mark(self, status: str) -> None:
        if self.story is None:
            return
        self.post_message(MarkRequest(Case(**self.story["case"]), status))
