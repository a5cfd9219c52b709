"""The one signing dialog: operator, reason, passphrase, and exactly what will be signed.

It signs any ``SignedAction`` (``core.signing.signed_action``): the role it needs,
its preview and its words all come from the action, so a dialog of its own holds
only the action's form fields (``extra_fields``, ``form_values``, ``plan_args``).
The preview is rebuilt from the store as the fields change, on the console's store
thread, and the signature is made against that very preview (``expected=``), so
the operator signs what they read or nothing at all.

With the console's signing session (``app.signing``), the passphrase unlocks
the operator's key once; later dialogs sign with the unlocked key, each one
still previewed and signed on its own, until the session locks.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from core.i18n import N_, _
from core.rules.retention import RetentionError
from core.rules.text import Said, escape_text, plain, said
from core.signing import signed_action, unlock_guard
from core.signing.keys import ActionError
from core.signing.operators import list_operators, load_signer
from core.signing.roles import WHAT
from console.render import safe
from console.messages import SigningChanged
from console.widgets.words_footer import WordsFooter


def unlock_place() -> str:
    """Where a failed unlock happened, for the home's log: the browser (``serve``) or a terminal."""
    return "browser" if os.environ.get("TEXTUAL_DRIVER", "").endswith(":WebDriver") else "console"


FOCUS_MARK = "▶ "  # before the label of the field that has the keyboard: a mark, not a colour


class SignForm(ModalScreen[bool]):
    """At 80x24 (``-short``) the form takes the screen's height and the preview takes what is left,
    scrolling with a scrollbar, so the buttons stay in view (docs in signing.tcss)."""

    CSS_PATH = Path(__file__).with_name("signing.tcss")
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]
    BINDINGS = [
        Binding("escape", "cancel", N_("Cancel")),
        Binding("ctrl+s", "sign", N_("Sign")),
    ]
    FIRST_FIELD = "#reason"  # focused at once: typing goes into it, never into the operator list

    def __init__(self, home, action: signed_action.SignedAction, args: dict | None = None, *,
                 title: str = "Sign", sign_label: str | None = None, **kwargs):
        super().__init__(**kwargs)
        self.home = home
        self.signed = action
        self.args = dict(args or {})  # the action's plan arguments the dialog was opened with
        self.title_text = _(title)  # a caller's title comes marked (N_) or already in words
        self.sign_label = _(sign_label or N_("Sign"))
        self.preview = None
        self._preview_for: tuple | None = None  # the fields the preview on screen was made from
        self._previewing: tuple | None = None  # the fields a preview is being made from
        self._asked: tuple | None = None  # the fields of a sign asked for before their preview was shown
        self._error_field: str | None = None  # the field the error on screen names: a change there clears it

    # -- an action's own form fields ---------------------------------------------------
    def extra_fields(self) -> ComposeResult:
        yield from ()

    def form_values(self) -> dict:
        """The dialog's own fields, read on the UI thread (widgets are not for other threads)."""
        return {}

    def plan_args(self, values: dict) -> dict:
        """The action's plan arguments from the form's values; a ValueError says what is missing."""
        return {**self.args, **values}

    # -- the action, on the store thread -------------------------------------------------
    def describe(self, receiver, operator: str, reason: str, values: dict):
        return signed_action.preview(receiver, self.signed, self.plan_args(values), operator, reason)

    def sign(self, receiver, operator: str, signer, reason: str, preview, values: dict) -> str:
        """Sign with ``signer`` (an unlocked key) and apply; return what happened, in one line."""
        done = signed_action.sign(self.home, receiver, self.signed, self.plan_args(values), operator=operator,
                                  signer=signer, reason=reason, expected=preview)
        words = signed_action.signed_words(done, self.signed)
        if "pending" in done:
            return words
        # Our words (a Said keeps the language's letters) with the action's outside text made plain.
        return Said(_("%(done)s; audit entry #%(seq)s", done=words if isinstance(words, Said) else plain(words),
                      seq=done["entry"]["seq"]))

    # -- layout ---------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        # Compact fields, one line each with the label beside them: the whole form fits 80x24.
        with Vertical(id="sign-box"):
            needs = " " + _("(needs the %(role)s role)", role=self.signed.role)
            yield Label(Text(self.title_text + needs), id="sign-title")
            # Right under the title, so an error is in sight at 80x24 without scrolling.
            yield Static(Text(""), id="sign-result")
            yield from self.extra_fields()
            with Horizontal(classes="field"):
                yield Label(_("Operator"))
                yield Select([], prompt=_("choose who signs"), id="operator", allow_blank=True, compact=True)
            with Horizontal(classes="field"):
                yield Label(_("Reason"))
                yield Input(placeholder=_("why, in one line (required)"), id="reason", max_length=500, compact=True)
            with VerticalScroll(id="preview-box"):  # focusable: Tab reaches it, arrows scroll it
                yield Static(Text(_("choose an operator and give a reason")), id="preview")
            with Horizontal(classes="field"):
                yield Label(_("Passphrase"))
                yield Input(password=True, placeholder=_("the operator's passphrase"), id="passphrase", compact=True)
            with Horizontal(id="sign-buttons"):
                yield Button(_("%(label)s (ctrl+s)", label=self.sign_label), id="sign", variant="primary", compact=True)
                yield Button(_("Cancel (esc)"), id="cancel", compact=True)
        yield WordsFooter()  # the dialog's own keys, not the screen's under it

    def on_mount(self) -> None:
        box = self.query_one("#preview-box", VerticalScroll)
        box.border_title = _("what will be signed")
        box.border_subtitle = _("Tab here, then up/down to read it all")
        self.query_one(self.FIRST_FIELD).focus()
        self.load_operators()

    @work(exclusive=True, group="operators")
    async def load_operators(self) -> None:
        rows = await self.app.view.run(lambda r: list_operators(r, include_retired=False))
        role = self.signed.role  # only operators who hold it are offered
        others = [o for o in rows if role not in o["roles"]]
        rows = [o for o in rows if o not in others]  # offered: only who may sign this action
        select = self.query_one("#operator", Select)
        select.set_options([(escape_text(o["name"], 40), o["name"]) for o in rows])
        names = [o["name"] for o in rows]
        unlocked = self._session().operator if self._session() is not None else None
        # Never a guess at who sits at the keyboard (such as who signed last): the operator chooses,
        # unless this session holds one operator's key or only one operator may sign.
        if unlocked in names:
            select.value = unlocked
        elif len(names) == 1:
            select.value = names[0]
        if unlocked is not None and any(o["name"] == unlocked for o in others):
            self.show_result(_("%(name)s's unlocked key cannot sign this: it needs the %(role)s role "
                               "(%(what)s); choose an operator who holds it.", name=unlocked, role=role,
                               what=_(WHAT[role])))
        elif not rows and others:
            self.show_result(_("No active operator holds the %(role)s role (%(what)s): an admin grants "
                               "it with %(command)s.", role=role, what=_(WHAT[role]),
                               command=f"`ussd-console operator grant NAME {role}`"))
        elif not rows:
            self.show_result(_("No operators yet: add one with %(command)s.", command="`ussd-console operator add NAME`"))
        self.refresh_preview()

    # -- which field has the keyboard -------------------------------------------------------------
    def on_descendant_focus(self, event) -> None:
        self._mark_focus()

    def on_descendant_blur(self, event) -> None:
        self.call_after_refresh(self._mark_focus)

    def _mark_focus(self) -> None:
        """Put the mark before the label of the focused field, and only there."""
        for row in self.query(".field"):
            label = row.query_one(Label)
            plain = str(label.content).removeprefix(FOCUS_MARK)
            focused = self.focused is not None and self.focused in row.query("*")
            label.update(FOCUS_MARK + plain if focused else plain)
            # A class, not :focus-within: a Select's row matched that with the keyboard elsewhere.
            row.set_class(focused, "-focused")
        box = self.query_one("#preview-box", VerticalScroll)
        box.border_title = ("▶ " if self.focused is box else "") + _("what will be signed")

    # -- preview ------------------------------------------------------------------------------
    def _operator(self) -> str:
        value = self.query_one("#operator", Select).value
        return value if isinstance(value, str) else ""

    def _reason(self) -> str:
        return self.query_one("#reason", Input).value.strip()

    @on(Select.Changed)
    @on(Input.Changed, "#reason")
    def _changed(self, event) -> None:
        self._clear_error_of(event.control)
        self._show_unlocked()
        self.refresh_preview()

    @on(Input.Changed, "#passphrase")
    def _passphrase_changed(self, event: Input.Changed) -> None:
        self._clear_error_of(event.control)

    def _clear_error_of(self, field) -> None:
        """An error that names a field ("a reason is required") is stale once that field changes."""
        if self._error_field is not None and field is not None and field.id == self._error_field:
            self.show_result("")

    def _session(self):
        return getattr(self.app, "signing", None)

    def _unlocked(self, operator: str) -> bool:
        session = self._session()
        return bool(operator) and session is not None and session.operator == operator

    def _show_unlocked(self) -> None:
        """With the operator's key unlocked for the session, no passphrase is asked."""
        box = self.query_one("#passphrase", Input)
        unlocked = self._unlocked(self._operator())
        box.disabled = unlocked
        box.placeholder = (_("key unlocked for this session (ctrl+l locks it)") if unlocked
                           else _("the operator's passphrase"))

    def _fields(self) -> tuple:
        return self._operator(), self._reason(), self.form_values()

    def refresh_preview(self) -> None:
        fields = self._fields()
        self.preview, self._preview_for = None, None  # the old one no longer says what would be signed
        if self._asked is not None and self._asked != fields:
            self._asked = None
            self.show_result(_("the fields changed before the preview came: read it, then sign again"), error=True)
        self._previewing = fields if fields[0] and fields[1] else None
        self._update_preview(*fields)

    @work(exclusive=True, group="preview")
    async def _update_preview(self, operator: str, reason: str, values: dict) -> None:
        box = self.query_one("#preview", Static)
        fields = (operator, reason, values)
        if not operator or not reason:
            box.update(Text(_("choose an operator and give a reason")))
            return
        try:
            preview = await self.app.view.run(lambda r: self.describe(r, operator, reason, values))
        except (ActionError, RetentionError, ValueError) as exc:
            box.update(Text(_("cannot sign: %(why)s", why=said(exc, 300))))
            self._preview_done(fields, None)
            return
        box.update(Text("\n").join(safe(line, 300) for line in preview.lines))  # ``Said``: shown as they are
        self._preview_done(fields, preview)

    def _preview_done(self, fields: tuple, preview) -> None:
        """A preview came (``preview`` None: it says why nothing can be signed). A sign asked for
        these fields while it was on its way goes ahead once the preview is drawn: what is
        signed is always what the operator could read."""
        if fields != self._previewing:
            return  # made from fields changed since; their own preview is on its way
        self._previewing = None
        self.preview, self._preview_for = preview, (fields if preview is not None else None)
        if self._asked != fields:
            return
        self._asked = None
        if preview is None:
            self.show_result(_("nothing to sign: the preview says why"), error=True)
        else:
            self.call_after_refresh(self._sign_when_shown)

    def _sign_when_shown(self) -> None:
        if self.is_current:
            self.action_sign()

    # -- signing --------------------------------------------------------------------------------
    def show_result(self, message: str, error: bool = False, field: str | None = None) -> None:
        """``message``: our words (``_()`` or ``said``), the outside text in them escaped where they
        were made, so the language's letters stay letters. ``field``: the id of the field the error
        names; the error goes when that field changes."""
        self._error_field = field if error else None
        text = Text(_("Not signed: %(why)s", why=message) if error else message)
        if error:
            text.stylize("bold")
        self.query_one("#sign-result", Static).update(text)

    @on(Button.Pressed, "#sign")
    def _sign_pressed(self) -> None:
        self.action_sign()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    @on(Input.Submitted, "#passphrase")
    def _passphrase_entered(self) -> None:
        self.action_sign()

    @on(Input.Submitted, "#reason")
    def _reason_entered(self) -> None:
        if self._unlocked(self._operator()):
            self.action_sign()  # nothing more to type: the key is unlocked

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_sign(self) -> None:
        """Sign what the preview shows. Asked for before the preview of these very fields is
        shown (Enter right after typing the reason), the sign waits for it: the passphrase
        stays in its box meanwhile, and is cleared only when a signature is tried."""
        fields = operator, reason, values = self._fields()
        passphrase_box = self.query_one("#passphrase", Input)
        passphrase = passphrase_box.value
        if not operator:
            self.show_result(_("choose an operator"), error=True, field="operator")
            return
        if not reason:
            self.show_result(_("a reason is required"), error=True, field="reason")
            return
        if not passphrase and not self._unlocked(operator):
            self.show_result(_("give the passphrase"), error=True, field="passphrase")
            return
        preview = self.preview
        if preview is None or self._preview_for != fields or (preview.operator, preview.reason) != (operator, reason):
            if self._previewing == fields:
                self._asked = fields
                self.show_result(_("preparing the preview; it is signed once shown"))
            else:
                self.show_result(_("nothing to sign yet: check the preview"), error=True)
            return
        passphrase_box.value = ""  # never kept on screen after a try
        self._do_sign(operator, passphrase, reason, preview, values)

    @work(exclusive=True, group="sign")
    async def _do_sign(self, operator: str, passphrase: str, reason: str, preview, values: dict) -> None:
        session = self._session()
        where = unlock_place()
        unlocking = session is None or session.signer_for(operator) is None
        # Unlocking a key takes a few seconds (the passphrase's KDF is slow on purpose): say so.
        self.show_result(_("unlocking %(name)s's key (a few seconds), then signing...", name=escape_text(operator, 40))
                         if unlocking else _("signing..."))
        if unlocking:
            # After repeated failures the wait is served here, off the store's one thread.
            await asyncio.to_thread(unlock_guard.before_attempt, self.home, operator, where,
                                    lambda words: self.app.call_from_thread(self.show_result, words))

        def run(receiver):
            signer = session.signer_for(operator) if session is not None else None
            if signer is None:
                signer = load_signer(self.home, receiver, operator, passphrase, where=where)
            return signer, self.sign(receiver, operator, signer, reason, preview, values)

        try:
            signer, message = await self.app.view.run(run)
        except (ActionError, RetentionError, ValueError) as exc:
            self.show_result(said(exc, 300), error=True)  # the other fields keep what was typed
            self._show_unlocked()
            self.refresh_preview()
            self.query_one("#passphrase", Input).focus()
            return
        if session is not None:
            session.unlock(signer)
            self.app.post_message(SigningChanged())  # the header says whose key is unlocked
        self.app.notify(safe(message, 300).plain, title=_("Signed"), timeout=8, markup=False)
        self.dismiss(True)
