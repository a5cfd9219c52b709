"""Sub-commands of ``ussd-console``, one module per group.

Each module has ``register(subparsers, common)``; ``common`` is the parent
parser carrying ``--home`` and ``--json``. A handler takes ``(args, ctx)`` and
returns an exit code.
"""

MODULES = [
    "console.commands.ledger",
    "console.commands.files",
    "console.commands.demo",
    "console.commands.operators",
    "console.commands.audit",
    "console.commands.cases",
    "console.commands.export",
    "console.commands.watch",
    "console.commands.alerts",
    "console.commands.serve",
    "console.commands.ui",
    "console.commands.backup",
]


def default_command(args, ctx, parser) -> int:
    """No sub-command: open the operator console on the home."""
    from .ui import open_console

    return open_console(ctx)
