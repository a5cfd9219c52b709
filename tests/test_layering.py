"""The core stays free of the UI: importing ``core`` or any of its modules, in a fresh
interpreter, loads no ``textual``, no ``rich`` and nothing of ``console``.

A fresh interpreter, because in the test process the console is long since imported
and ``sys.modules`` would prove nothing.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import core
from tests.helpers import ROOT

UI = ("textual", "rich", "console")
CORE_MODULES = ["core"] + sorted(m.name for m in pkgutil.walk_packages(core.__path__, prefix="core."))

PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
ui = sorted(m for m in sys.modules if m.split(".")[0] in {ui!r})
print(json.dumps(ui))
""".format(ui=set(UI))


def test_the_core_has_modules_to_check():
    assert "core.inbox" in CORE_MODULES and "core.receiver" in CORE_MODULES


@pytest.mark.parametrize("module", CORE_MODULES)
def test_importing_a_core_module_loads_no_ui(module):
    proc = subprocess.run([sys.executable, "-c", PROBE, module], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [], f"importing {module} loads UI modules"


def test_the_probe_sees_a_ui_import():
    """The check can fail: a module that does import the console is caught."""
    proc = subprocess.run([sys.executable, "-c", PROBE, "console.render"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert "console.render" in found and "rich" in found
