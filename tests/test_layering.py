"""The layers hold: importing ``core`` or any of its modules loads no ``textual``, ``rich`` or
``console``; importing any module of ``core/rules/`` also loads no store, thread or file-watch
library (peewee, psycopg, sqlite3, watchdog).

Each import runs in a fresh interpreter, because in the test process the console is long since
imported and ``sys.modules`` would prove nothing. One probe serves both checks.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import core
import core.rules
from tests.helpers import ROOT

UI = {"textual", "rich", "console"}
IO = {"peewee", "psycopg", "sqlite3", "watchdog"}
CORE_MODULES = ["core"] + sorted(m.name for m in pkgutil.walk_packages(core.__path__, prefix="core."))
RULES = sorted(m.name for m in pkgutil.walk_packages(core.rules.__path__, prefix="core.rules."))

PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def loaded_by(module: str) -> set[str]:
    """Top-level packages present after importing ``module`` alone."""
    proc = subprocess.run([sys.executable, "-c", PROBE, module], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout))


def test_there_are_modules_to_check():
    assert {"core.inbox", "core.store.receiver", "core.signing.audit"} <= set(CORE_MODULES)
    assert {"core.rules.frame", "core.rules.decide", "core.rules.batch"} <= set(RULES)


@pytest.mark.parametrize("module", CORE_MODULES)
def test_importing_a_core_module_loads_no_ui(module):
    found = loaded_by(module) & (UI | (IO if module in RULES or module == "core.rules" else set()))
    assert not found, f"importing {module} loads {sorted(found)}"


def test_the_probe_sees_what_a_module_loads():
    """The check can fail: a console module is seen loading rich, the store loading peewee."""
    assert {"console", "rich"} <= loaded_by("console.render")
    assert "peewee" in loaded_by("core.store.receiver")
