"""What the command line does before it imports the store: leave PostgreSQL's driver out when
no PostgreSQL store can be in play.

peewee imports psycopg at its own import whenever psycopg is installed, and psycopg's import
(asyncio, ssl, its type adapters, libpq) costs more CPU than everything else a command like
``status`` does: about 0.4 s of 0.95 s on this project's two-core machine. A receiver on
SQLite never uses it. The store's address comes from ``--db``, ``$USSD_CONSOLE_DB`` or ``db =``
in the home's ``config.toml`` (``core.config.store_target``), so the word ``postgres`` in none
of them means the driver cannot be needed; anything unclear keeps the ordinary import.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from core.home import DEFAULT_HOME, ENV_HOME

MARK = "postgres"  # postgresql:// and postgres:// alike


def postgres_possible(argv: list[str]) -> bool:
    """False only when no ``--db``, environment value or home config can name a PostgreSQL store."""
    if any(MARK in arg.lower() for arg in argv) or MARK in os.environ.get("USSD_CONSOLE_DB", "").lower():
        return True
    home = os.environ.get(ENV_HOME) or DEFAULT_HOME
    for i, arg in enumerate(argv):
        if arg == "--home" and i + 1 < len(argv):
            home = argv[i + 1]
        elif arg.startswith("--home="):
            home = arg.split("=", 1)[1]
    try:
        config = Path(home).expanduser() / "config.toml"
        if not config.exists():
            return False
        # A comment names no store: a new home's config.toml lists `db` commented out, with the
        # word in its meaning.
        return any(MARK in line.lower() for line in config.read_text(errors="replace").splitlines()
                   if not line.lstrip().startswith("#"))
    except (OSError, RuntimeError, ValueError):  # unreadable: let the ordinary path report it
        return True


def import_store_driver(argv: list[str]) -> None:
    """Import peewee, without psycopg unless a PostgreSQL store may be opened by this command."""
    if "peewee" in sys.modules or postgres_possible(argv):
        return
    blocked = "psycopg" not in sys.modules
    if blocked:
        sys.modules["psycopg"] = None  # peewee's `import psycopg` fails, so it marks the driver absent
    try:
        import peewee  # noqa: F401
    finally:
        if blocked:
            del sys.modules["psycopg"]
