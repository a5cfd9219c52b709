"""Signed actions through the console (Pilot): resolve both ways, a retention exception,
and a wrong passphrase that changes nothing."""

from __future__ import annotations

from textual.widgets import Input, Static

from console.dialogs.exception_dialog import ExceptionDialog
from console.dialogs.resolve_dialog import ResolveDialog
from core import Receiver
from core.signing.audit import verify
from core.rules.retention import DAY
from tests.support.helpers import quarantine_item
from tests.support.console_support import fixed_app, run_async, until
from tests.support.signing import PASS
from tests.support.console_pilot import fill_and_sign, open_dialog, with_operator


def state(home):
    with Receiver(str(home.db)) as r:
        return {
            "headcount": r.headcount_total(),
            "open": [q.id for q in r.quarantine(status="open", limit=100)],
            "retention": r.retention_seconds(),
            "audit": verify(r).count,
        }


@run_async
async def test_accept_correction_in_the_console(sample_home):
    item = with_operator(sample_home)
    before = state(sample_home)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_dialog(app, pilot, "3", "a", ResolveDialog)
        dialog = await fill_and_sign(app, pilot, "site radioed the new count", PASS)
        await until(lambda: app.screen is not dialog)
    after = state(sample_home)
    with Receiver(str(sample_home.db)) as r:
        done = quarantine_item(r, item.id)
        case = r.m.Case.get(r.m.Case.case_key == done["case_key"])
        history = r.case_history(case.id)
    assert done["status"] == "accepted_correction" and done["resolved_by"] == "alice"
    assert case.frame_text == item.frame_text and case.version == 2
    assert len(history) == 1 and history[0]["frame_text"] == item.first_text
    assert after["audit"] == before["audit"] + 1
    assert item.id not in after["open"]
    new_hc, old_hc = int(item.frame_text.split("|")[4]), int(item.first_text.split("|")[4])
    assert after["headcount"] == before["headcount"] + new_hc - old_hc


@run_async
async def test_keep_first_in_the_console(sample_home):
    item = with_operator(sample_home)
    before = state(sample_home)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_dialog(app, pilot, "3", "k", ResolveDialog)
        dialog = await fill_and_sign(app, pilot, "first count confirmed", PASS)
        await until(lambda: app.screen is not dialog)
    after = state(sample_home)
    assert after["headcount"] == before["headcount"]
    assert item.id not in after["open"] and after["audit"] == before["audit"] + 1


@run_async
async def test_wrong_passphrase_changes_nothing_and_says_so(sample_home):
    with_operator(sample_home)
    before = state(sample_home)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_dialog(app, pilot, "3", "a", ResolveDialog)
        dialog = await fill_and_sign(app, pilot, "try", "not the passphrase")
        result = dialog.query_one("#sign-result", Static)
        await until(lambda: "Not signed" in str(result.content))
        assert app.screen is dialog  # still open, for another try
        assert dialog.query_one("#passphrase", Input).value == ""  # never left on screen
    assert state(sample_home) == before
    log = sample_home.log_file.read_text(encoding="utf-8")
    assert "failed unlock for operator alice (console)" in log and "not the passphrase" not in log


@run_async
async def test_retention_exception_in_the_console(sample_home):
    with_operator(sample_home)
    before = state(sample_home)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_dialog(app, pilot, "4", "x", ExceptionDialog)
        dialog = await fill_and_sign(app, pilot, "disk nearly full", PASS, days="10")
        await until(lambda: app.screen is not dialog)
    after = state(sample_home)
    assert after["retention"] == 10 * DAY and after["audit"] == before["audit"] + 1
    with Receiver(str(sample_home.db)) as r:
        policy = r.retention()
    assert policy["is_exception"] and policy["set_by"] == "alice"


@run_async
async def test_retention_below_the_floor_cannot_be_signed(sample_home):
    with_operator(sample_home)
    before = state(sample_home)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_dialog(app, pilot, "4", "x", ExceptionDialog)
        await until(lambda: dialog.query_one("#operator").value == "alice")
        dialog.query_one("#days", Input).value = "2"
        dialog.query_one("#reason", Input).value = "tiny disk"
        preview = dialog.query_one("#preview", Static)
        await until(lambda: "cannot sign" in str(preview.content) and "72 hours" in str(preview.content))
        dialog.query_one("#passphrase", Input).value = PASS
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is dialog
    assert state(sample_home) == before


# -- Enter before the preview is shown: the sign waits for it, and signs what it then shows -------------------------
def gate_previews(monkeypatch, dialog_class):
    """Hold every preview of ``dialog_class`` until the returned event is set (a slow store)."""
    import threading

    gate = threading.Event()
    real = dialog_class.describe

    def held(self, *args):
        gate.wait(60)
        return real(self, *args)

    monkeypatch.setattr(dialog_class, "describe", held)
    return gate


def record_signing(monkeypatch, dialog_class) -> list[tuple[str, str]]:
    """Each signature made: the preview the operator read (as drawn) and what was signed."""
    seen = []
    real = dialog_class._do_sign

    def recording(self, operator, passphrase, reason, preview, values):
        seen.append((str(self.query_one("#preview", Static).content), preview.text))
        return real(self, operator, passphrase, reason, preview, values)

    monkeypatch.setattr(dialog_class, "_do_sign", recording)
    return seen


@run_async
async def test_enter_right_after_the_reason_waits_for_the_preview_then_signs_what_it_shows(sample_home, monkeypatch):
    from console.dialogs.mark_dialog import MarkDialog
    from core.signing.operators import load_signer

    with_operator(sample_home)
    gate = gate_previews(monkeypatch, MarkDialog)
    signed = record_signing(monkeypatch, MarkDialog)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        with Receiver(str(sample_home.db)) as r:
            app.signing.unlock(load_signer(sample_home, r, "alice", PASS))
        try:
            dialog = await open_dialog(app, pilot, "2", "D", MarkDialog)
            await until(lambda: dialog.query_one("#operator").value == "alice")
            await pilot.press(*"team left", "enter")  # in one go, as an operator types it
            result = dialog.query_one("#sign-result", Static)
            await until(lambda: str(result.content), what="the dialog's answer to the early Enter")
            assert "preparing the preview" in str(result.content)
            assert "Not signed" not in str(result.content) and not signed
        finally:
            gate.set()
        await until(lambda: app.screen is not dialog, what="the signature once the preview came")
    assert len(signed) == 1
    shown, text = signed[0]
    assert shown == text and "team left" in text  # signed exactly the preview on screen
    with Receiver(str(sample_home.db)) as r:
        case = r.m.Case.get(r.m.Case.frame_id == dialog.case.frame_id)
        assert case.status == "dispatched"


@run_async
async def test_a_passphrase_typed_before_the_preview_came_is_kept_and_used(sample_home, monkeypatch):
    with_operator(sample_home)
    before = state(sample_home)
    gate = gate_previews(monkeypatch, ResolveDialog)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        try:
            dialog = await open_dialog(app, pilot, "3", "a", ResolveDialog)
            await until(lambda: dialog.query_one("#operator").value == "alice")
            dialog.query_one("#reason", Input).value = "site radioed the new count"
            box = dialog.query_one("#passphrase", Input)
            box.value = PASS
            box.focus()
            await pilot.pause()
            await pilot.press("enter")
            result = dialog.query_one("#sign-result", Static)
            await until(lambda: str(result.content), what="the dialog's answer to the early Enter")
            assert "preparing the preview" in str(result.content)
            assert box.value == PASS  # not thrown away while the preview is on its way
        finally:
            gate.set()
        await until(lambda: app.screen is not dialog, what="the signature once the preview came")
    assert state(sample_home)["audit"] == before["audit"] + 1
