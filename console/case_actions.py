"""What the console does for a case and for exports: its history, signed marks, the signing
session, and writing any view to a file.

A mixin of ``ConsoleApp`` (beside ``OperatorActions``); needs the app's ``home``,
``store``, ``clock``, ``signing`` and ``open_dialog``. Panels and the case screen ask by
message (``MarkRequest``, ``OpenCase``, ``ExportRequest``); the handlers are here.
"""

from __future__ import annotations

import logging

from textual import work

from core.i18n import _, ngettext, number
from core import Receiver
from core.rules.text import escape_text, said

from .dialogs.case_screen import CaseScreen
from .dialogs.export_dialog import ExportDialog
from .dialogs.mark_dialog import MarkDialog
from .exports import default_target, write_export
from .messages import ExportRequest, MarkRequest, OpenCase, SigningChanged
from .ui_text import count

log = logging.getLogger("ussd.console")


class CaseActions:
    # -- a case's history and its marks --------------------------------------------------
    def on_open_case(self, message: OpenCase) -> None:
        if message.case_id is None and message.case_key is None:
            self.notify(_("No case selected."), markup=False)
            return
        self.push_screen(CaseScreen(case_id=message.case_id, case_key=message.case_key))

    def on_mark_request(self, message: MarkRequest) -> None:
        """Open the signing dialog that marks the case (previewed, signed); when it signed, every
        screen reloads, so the new status shows at once on Cases, Ranking and the case's history."""
        if message.case is None:
            self.notify(_("No case selected."), markup=False)
            return
        self.open_dialog(MarkDialog, case=message.case, status=message.status)

    # -- the signing session -----------------------------------------------------------------
    def action_lock_key(self) -> None:
        name = self.signing.lock()
        self.notify(_("Signing key of %(name)s locked.", name=escape_text(name, 32)) if name
                    else _("No signing key is unlocked."), title=_("Signing"), markup=False)
        self.show_signing()

    def _signing_tick(self) -> None:
        name = self.signing.lock_if_idle()
        if name:
            self.notify(_("Signing key of %(name)s locked after %(minutes)s idle minutes; the next signature "
                          "asks for the passphrase.", name=escape_text(name, 32),
                          minutes=number(self.signing.idle_seconds / 60)),
                        title=_("Signing"), markup=False, timeout=10)
        self.show_signing()

    def on_signing_changed(self, message: SigningChanged) -> None:
        self.show_signing()

    def show_signing(self) -> None:
        header = self.header_bar()
        if header is None:
            return
        unlocked = self.signing.operator
        if header.unlocked != unlocked:
            header.unlocked = unlocked
            header.refresh()

    # -- exports ---------------------------------------------------------------------------------
    def on_export_request(self, message: ExportRequest) -> None:
        self.action_export(message.view)

    @work(group="export-dialog", exclusive=True, exit_on_error=False)
    async def action_export(self, view: str = "ranking") -> None:
        choice = await self.push_screen_wait(ExportDialog(view, self.home.exports))
        if choice:
            self._export(*choice)
        else:
            self.notify(_("Export cancelled; nothing was written."), title=_("Export"), markup=False, timeout=4)

    @work(thread=True, group="export", exclusive=True, exit_on_error=False)
    def _export(self, view: str, fmt: str) -> None:
        try:
            target = default_target(self.home.exports, view, fmt, self.clock())
            with Receiver(self.store_target) as receiver:
                rows = write_export(receiver, view, target, fmt)
        except Exception as exc:
            log.exception("export failed")
            self.notify(_("Export failed: %(error)s", error=said(exc, 160)), severity="error", markup=False)
            return
        self.notify(ngettext("%(view)s: %(n)s row written to %(file)s", "%(view)s: %(n)s rows written to %(file)s",
                             rows, view=view, n=count(rows), file=escape_text(target, 160)),
                    title=_("Export"), markup=False, timeout=10)
