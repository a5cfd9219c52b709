"""The table of signed actions (console/signed_actions.py) against every copy of what it says: the
roles verify keeps (core.signing.roles.NEEDS), the help screen's "who may sign what", the table of
docs/roles.md, and the actions the command line, the dialogs and the console's keys sign. Each copy
is checked by ``disagreements``, and a test shows it names a copy changed behind the table's back."""

from __future__ import annotations

from types import SimpleNamespace

import io
from pathlib import Path

from rich.console import Console

from console import actions, signed_actions
from console.dialogs.exception_dialog import ExceptionDialog
from console.dialogs.help_screen import who_may_table
from console.dialogs.mark_dialog import MarkDialog
from console.dialogs.resolve_dialog import ResolveDialog
from core.signing import held, roles, signed_action
from core.signing.actions import ACCEPT, KEEP, RETENTION
from core.signing.marks import MARK

DOCS = Path(__file__).resolve().parent.parent / "docs" / "roles.md"


def help_text() -> str:
    """The help screen's "who may sign what" as text, one row a line, spaces run together."""
    out = Console(file=io.StringIO(), width=200, no_color=True)
    out.print(who_may_table())
    return "\n".join(" ".join(line.split()) for line in out.file.getvalue().splitlines())


def help_rows_from_the_table() -> list[str]:
    """What "who may sign what" must say for each signing key of the console, from the table alone."""
    rows = []
    for a in actions.ACTIONS:
        if a.signed:
            role = signed_actions.BY_ID[a.signed].role
            rows.append(f"{a.id} needs the {role} role ({roles.WHAT[role]})")
    return rows


def disagreements(needs: dict, help_text: str, docs_text: str) -> list[str]:
    """Every way the copies differ from the table; empty when they all say what it says."""
    found = []
    table = signed_actions.roles_needed()
    for action_id, role in table.items():
        if needs.get(action_id) != role:
            found.append(f"roles.NEEDS says {action_id} needs {needs.get(action_id)}, the table {role}")
    found += [f"roles.NEEDS names {a}, which the table does not" for a in needs if a not in table]
    lines = help_text.splitlines()
    found += [f"the help screen lacks {row!r}" for row in help_rows_from_the_table() if row not in lines]
    if signed_actions.docs_table() not in docs_text:
        found.append("docs/roles.md's table is not the table's (python -m console.signed_actions prints it)")
    return found


def test_every_copy_says_what_the_table_says():
    assert disagreements(roles.NEEDS, help_text(), DOCS.read_text(encoding="utf-8")) == []


def test_a_copy_that_disagrees_is_named():
    docs = DOCS.read_text(encoding="utf-8")
    needs = {**roles.NEEDS, "case.mark": roles.ADMIN}
    assert disagreements(needs, help_text(), docs) == [
        "roles.NEEDS says case.mark needs admin, the table dispatcher"]
    assert disagreements({**roles.NEEDS, "case.unmark": roles.ADMIN}, help_text(), docs) == [
        "roles.NEEDS names case.unmark, which the table does not"]
    shown = help_text().replace("keep_first needs the resolver role", "keep_first needs the admin role")
    assert disagreements(roles.NEEDS, shown, docs) == [
        "the help screen lacks 'keep_first needs the resolver role (resolving conflicts)'"]
    edited = docs.replace("| `case mark FRAME_ID STATUS` | `dispatcher` |", "| `case mark FRAME_ID STATUS` | `admin` |")
    assert edited != docs
    assert disagreements(roles.NEEDS, help_text(), edited) == [
        "docs/roles.md's table is not the table's (python -m console.signed_actions prints it)"]


def test_verify_asks_each_entry_the_role_the_table_gives_it():
    for action in signed_actions.SIGNED_ACTIONS:
        assert roles.needed(action.id) == action.role


def test_the_console_and_its_dialogs_sign_the_table_entries():
    signed = {a.signed for a in actions.ACTIONS if a.signed}
    assert signed == {MARK.id, KEEP.id, ACCEPT.id, RETENTION.id}
    assert all(signed_actions.BY_ID[s].role == a.role for a in actions.ACTIONS if a.signed for s in [a.signed])
    case, item = SimpleNamespace(frame_id="kak01-1"), SimpleNamespace(id=3)  # the records' fields the dialogs read
    assert MarkDialog(case, "served", home=None).signed is MARK
    assert ResolveDialog(item, "keep_first", home=None).signed is KEEP
    assert ResolveDialog(item, "accept_correction", home=None).signed is ACCEPT
    assert ExceptionDialog({"retention_seconds": 30 * 86400}, home=None).signed is RETENTION


def test_every_action_signs_through_the_one_path():
    """No action keeps a transaction of its own: each has a plan, an apply and its preview's
    lines; only the first operator's add signs with the key it registers (``signs_itself``), and
    each action a second admin can be asked to approve says what it would do and how it rechecks."""
    assert not hasattr(signed_action.SignedAction, "own_path")
    assert {a.id for a in signed_actions.SIGNED_ACTIONS if a.signs_itself} == {"operator.add"}
    for action in signed_actions.SIGNED_ACTIONS:
        assert callable(action.plan) and callable(action.apply) and callable(action.lines), action.id
    for action_id in held.KIND_OF:
        entry = signed_actions.BY_ID[action_id]
        assert entry.what is not None, action_id
        if action_id not in (roles.OPERATOR_GRANT, roles.OPERATOR_REVOKE):  # the role rules recheck those
            assert entry.recheck is not None, action_id
