"""Sub-commands of ``ussd-console``: one module per command, or per few closely related ones.

Each module in ``MODULES`` has ``register(subparsers, common)``; ``common`` is
the parent parser carrying ``--home``, ``--db`` and ``--json``
(``options.common_parser``). A handler takes ``(args, ctx)`` and returns an
exit code. Helpers several commands use are in ``common``. A new command is a
new module added here; the order is the order of ``ussd-console --help``.
"""

MODULES = [
    "console.commands.ingest",
    "console.commands.status",
    "console.commands.ledger",
    "console.commands.quarantine",
    "console.commands.rejects",
    "console.commands.eviction",
    "console.commands.files",
    "console.commands.demo",
    "console.commands.operators",
    "console.commands.pending",
    "console.commands.audit",
    "console.commands.cases",
    "console.commands.export",
    "console.commands.watch",
    "console.commands.alerts",
    "console.commands.serve",
    "console.commands.ui",
    "console.commands.gateway",
    "console.commands.backup",
]


def default_command(args, ctx, parser) -> int:
    """No sub-command: open the operator console on the home."""
    from .ui import open_console

    return open_console(ctx)
