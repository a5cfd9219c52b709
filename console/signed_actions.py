"""Every signed action of the home, one entry each (``core.signing.signed_action.SignedAction``).

Each entry is declared beside its plan and apply (``core/signing``, ``core/gateways``,
``core/alerts``); this table gathers them above every package that declares one. From
it come the console's signed actions (``console.actions``: their role), the help
screen's "who may sign what", and the checks that the role copy verify keeps
(``core.signing.roles.NEEDS``) and the table of docs/roles.md say the same
(tests/test_signed_table.py).
"""

from __future__ import annotations

from core.alerts.resume import RESUME
from core.gateways import signed as gateways
from core.signing import actions, decisions, held, marks, operator_add, operator_changes
from core.signing.backup_record import RECORD_KEY
from core.signing.signed_action import SignedAction


def entry(action_id: str) -> SignedAction:
    """The table's entry of an action id (a held request's action, for the decisions on it)."""
    return BY_ID[action_id]


APPROVE = decisions.approving(entry)
REJECT = decisions.rejecting(entry)
SIGNED_ACTIONS: tuple[SignedAction, ...] = (
    actions.KEEP,
    actions.ACCEPT,
    marks.MARK,
    actions.RETENTION,
    gateways.ADD,
    gateways.RETIRE,
    operator_add.ADD,
    operator_changes.RETIRE,
    operator_changes.GRANT,
    operator_changes.REVOKE,
    operator_changes.ADOPT,
    RECORD_KEY,
    RESUME,
    APPROVE,
    REJECT,
)
BY_ID: dict[str, SignedAction] = {a.id: a for a in SIGNED_ACTIONS}
assert len(BY_ID) == len(SIGNED_ACTIONS), "a signed action is declared twice"


def roles_needed() -> dict[str, str]:
    """Each signed action's id and the role it needs, as the table says."""
    return {a.id: a.role for a in SIGNED_ACTIONS}


DOCS_HEADER = ("| Action | Command | Role needed | Countersign (`[signing] countersign`) |\n"
               "|---|---|---|---|\n")


def docs_row(action: SignedAction) -> str:
    """One row of docs/roles.md's "Who may do what": the countersign kind is the one that holds it
    for a second admin, "no" when none does, "-" for a decision on a held request itself."""
    role = f"`{action.role}`" + (f", {action.role_note}" if action.role_note else "")
    kind = held.KIND_OF.get(action.id)
    countersign = f"`{kind}`" if kind else "-" if action.id in held.DECISIONS else "no"
    return f"| {action.title} | `{action.command}` | {role} | {countersign} |"


def docs_table() -> str:
    """The table's signed rows, as docs/roles.md begins its "Who may do what" table."""
    return DOCS_HEADER + "".join(docs_row(a) + "\n" for a in SIGNED_ACTIONS)


if __name__ == "__main__":  # python -m console.signed_actions: the rows for docs/roles.md
    print(docs_table(), end="")
