"""Sub-commands of ``ussd-console``: one module per command, or per few closely related ones.

Each module in ``MODULES`` has ``register(subparsers, common)``; ``common`` is
the parent parser carrying ``--home``, ``--db`` and ``--json``
(``options.common_parser``). A handler takes ``(args, ctx)`` and returns an
exit code. Helpers several commands use are in ``common``. A new command is a
new entry in ``COMMANDS``; its order is the order of ``ussd-console --help``.
"""

# Each command's name and the module that registers it, in ``--help`` order. A command line
# that names one of them builds only that module's parser: importing every module (the inbox
# service, spreadsheet readers, the metrics server, the demo's gateway) costs more CPU than most
# commands spend on their work. A test checks this table against what each module registers.
COMMANDS = {
    "ingest": "console.commands.ingest",
    "frame": "console.commands.frame",
    "status": "console.commands.status",
    "cases": "console.commands.ledger",
    "ranking": "console.commands.ledger",
    "quarantine": "console.commands.quarantine",
    "rejects": "console.commands.rejects",
    "evictions": "console.commands.eviction",
    "evict": "console.commands.eviction",
    "files": "console.commands.files",
    "demo": "console.commands.demo",
    "operator": "console.commands.operators",
    "resolve": "console.commands.operators",
    "retention": "console.commands.operators",
    "pending": "console.commands.pending",
    "approve": "console.commands.pending",
    "reject": "console.commands.pending",
    "audit": "console.commands.audit",
    "case": "console.commands.cases",
    "export": "console.commands.export",
    "report": "console.commands.report",
    "watch": "console.commands.watch",
    "alerts": "console.commands.alerts",
    "serve": "console.commands.serve",
    "console": "console.commands.ui",
    "gateway": "console.commands.gateway",
    "backup": "console.commands.backup",
    "restore": "console.commands.backup",
}
MODULES = list(dict.fromkeys(COMMANDS.values()))


def default_command(args, ctx, parser) -> int:
    """No sub-command: open the operator console on the home."""
    from .ui import open_console

    return open_console(ctx)
