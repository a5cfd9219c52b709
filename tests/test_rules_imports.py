"""Every module of core/rules/ imports in a fresh interpreter without any I/O library."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import core.rules
from tests.helpers import ROOT

HEAVY = ("peewee", "psycopg", "sqlite3", "watchdog", "textual", "rich")
RULES = sorted(info.name for info in pkgutil.walk_packages(core.rules.__path__, "core.rules."))


def test_the_rules_package_is_not_empty():
    assert {"core.rules.frame", "core.rules.decide", "core.rules.batch"} <= set(RULES)


@pytest.mark.parametrize("module", RULES)
def test_a_rule_module_loads_no_store_thread_or_ui_library(module):
    probe = (
        f"import json, sys; import {module}; "
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [], f"{module} loads {out.stdout.strip()}"
