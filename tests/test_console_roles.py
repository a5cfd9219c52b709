"""The console's signing dialogs offer only the operators whose roles allow the action, and say the role."""

from __future__ import annotations

from textual.widgets import Label, Select, Static

from console.dialogs.exception_dialog import ExceptionDialog
from console.dialogs.resolve_dialog import ResolveDialog
from core import Receiver
from core.signing.operator_add import add_operator
from core.signing.operators import load_signer
from core.signing.roles import RESOLVER
from tests.support.console_support import fixed_app, run_async, until
from tests.support.signing import PASS, PASSPHRASES
from tests.support.console_pilot import open_dialog
from tests.support.console_pilot import team


def offered(dialog) -> list[str]:
    return [value for _label, value in dialog.query_one("#operator", Select)._options if isinstance(value, str)]


@run_async
async def test_a_resolve_dialog_offers_resolvers_and_a_retention_dialog_only_admins(sample_home):
    team(sample_home)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_dialog(app, pilot, "3", "k", ResolveDialog)
        await until(lambda: "bob" in offered(dialog))
        assert sorted(offered(dialog)) == ["alice", "bob"]
        assert "needs the resolver role" in str(dialog.query_one("#sign-title", Label).content)
        await pilot.press("escape")
        await until(lambda: app.screen is not dialog)
        dialog = await open_dialog(app, pilot, "4", "x", ExceptionDialog)
        await until(lambda: "alice" in offered(dialog))
        assert offered(dialog) == ["alice"]
        assert "needs the admin role" in str(dialog.query_one("#sign-title", Label).content)


@run_async
async def test_no_holder_of_the_role_is_said_in_the_dialog(sample_home):
    team(sample_home)
    with Receiver(str(sample_home.db)) as r:
        r.db.execute_sql("UPDATE operators SET retired_at = 1 WHERE name = 'alice'")  # only bob is offered
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_dialog(app, pilot, "4", "x", ExceptionDialog)
        result = dialog.query_one("#sign-result", Static)
        await until(lambda: "No active operator holds the admin role" in str(result.content))
        assert offered(dialog) == []
