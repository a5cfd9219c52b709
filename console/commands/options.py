"""The options every sub-command shares (``--home``, ``--db``, ``--lang``, ``--json``), as an argparse parent.

A module of its own so that the command line and each command module import it
without importing each other.
"""

from __future__ import annotations

import argparse

from core.home import DEFAULT_HOME, ENV_HOME
from core.i18n import _, shipped


def common_parser(json: bool = True) -> argparse.ArgumentParser:
    """--home and --db for every command; --json for those that print results (not the console or demo)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--home",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help=_("home folder (default $%(variable)s or ./%(folder)s)", variable=ENV_HOME, folder=DEFAULT_HOME),
    )
    common.add_argument(
        "--db",
        metavar="URL",
        default=argparse.SUPPRESS,
        help=_("store: a SQLite path or postgresql://... (default <home>/receiver.db)"),
    )
    common.add_argument(
        "--lang",
        metavar="LANG",
        default=argparse.SUPPRESS,
        help=_("the language of this run's words (%(languages)s; default [console] language, then $LANG)",
               languages=", ".join(shipped())),
    )
    if json:
        common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                            help=_("machine-readable output: one JSON object per line, with the exact codes"))
    return common
