"""The console says when a signed change waits for a second admin, and applies nothing."""

from __future__ import annotations

from console import signed_actions
from console.dialogs.exception_dialog import ExceptionDialog
from core import Receiver
from core.signing import countersign
from core.signing.operator_add import add_operator
from core.signing.operators import load_signer
from core.signing.roles import ADMIN
from tests.support.console_support import fixed_app, notes_on_screen, run_async, until
from tests.support.signing import PASS, PASSPHRASES
from tests.support.console_pilot import fill_and_sign, open_dialog


@run_async
async def test_a_held_retention_change_is_a_notification_with_its_request(sample_home):
    with Receiver(str(sample_home.db)) as r:
        add_operator(sample_home, r, "alice", PASS)
        add_operator(sample_home, r, "bob", PASSPHRASES["bob"], sponsor=load_signer(sample_home, r, "alice", PASS),
                     roles=[ADMIN])
        before = r.retention_seconds()
    kept = sample_home.config.read_text() if sample_home.config.exists() else ""
    sample_home.config.write_text(kept + '\n[signing]\ncountersign = ["retention"]\n')
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await open_dialog(app, pilot, "4", "x", ExceptionDialog)
        dialog = await fill_and_sign(app, pilot, "disk nearly full", PASS, days="10")
        await until(lambda: app.screen is not dialog)
        notes = await until(lambda: [n for n in notes_on_screen(app) if "waiting for a second admin" in n])
    with Receiver(str(sample_home.db)) as r:
        [held] = countersign.pending(r, signed_actions.BY_ID)
        assert r.retention_seconds() == before
    [note] = notes
    assert f"request {held['id']}" in note
