"""A command loads what it uses: only its own module's parser, and PostgreSQL's driver only
when a PostgreSQL store can be in play. Checked in a fresh interpreter, as a user runs it."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys

import pytest

from console.cli import build_parser, named_command
from console.commands import COMMANDS, MODULES
from console.commands.options import common_parser
from core import Receiver
from tests.support.helpers import ROOT

PROBE = """
import json, sys
from console.cli import main
code = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.startswith(("console.commands.", "psycopg")))
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


def probe(*argv: str, env: dict | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "USSD_CONSOLE_DB": "", **(env or {})})
    return json.loads(done.stderr.strip().splitlines()[-1])


def registered(module: str) -> list[str]:
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(module).register(sub, common_parser())
    return list(sub.choices)


def test_the_command_table_is_what_each_module_registers():
    by_module = {m: [name for name, owner in COMMANDS.items() if owner == m] for m in MODULES}
    assert {m: registered(m) for m in MODULES} == by_module
    assert list(build_parser()._subparsers._group_actions[0].choices) == [*COMMANDS, "help"]  # help: the CLI's own


@pytest.mark.parametrize("argv, command", [
    (["status"], "status"),
    (["--home", "x", "--json", "cases", "--limit", "3"], "cases"),
    (["--home=x", "operator", "list"], "operator"),
    (["--db", "status", "cases"], "cases"),  # a value that is a command's name is still a value
    (["--help", "status"], None),  # the top-level help lists every command
    (["stauts"], None),
    ([], None),
    (["--home"], None),  # an error the real parser reports
])
def test_the_named_command_is_found_before_the_parser_is_built(argv, command):
    assert named_command(argv) == command


def test_a_command_on_sqlite_loads_only_its_module_and_no_postgres_driver(home):
    Receiver(str(home.db)).close()
    seen = probe("--home", str(home.root), "operator", "list")
    assert seen["code"] == 0
    assert seen["loaded"] == ["console.commands.audit", "console.commands.common", "console.commands.operators",
                              "console.commands.options", "console.commands.signing"]


def test_a_home_whose_config_names_postgres_keeps_the_driver(home):
    home.config.write_text('db = "postgresql://nobody@127.0.0.1:1/none"\n')
    seen = probe("--home", str(home.root), "status")
    assert seen["code"] == 2  # no server there: a one-line error, from the driver that was loaded
    assert "psycopg" in seen["loaded"]
