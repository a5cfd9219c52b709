"""The layers hold: importing ``core`` or any of its modules loads no ``textual``, ``rich`` or
``console``; importing any module of ``core/rules/`` also loads no store, thread or file-watch
library (peewee, psycopg, sqlite3, watchdog).

The imports run in a fresh interpreter, because in the test process the console is long since
imported and ``sys.modules`` would prove nothing. One probe serves both checks: it imports the
modules in turn and notes after which one each library first appears. Imports only ever add to
``sys.modules``, so a library absent after all of them is loaded by none of them.

No module of ``core/`` or ``console/`` imports itself round a cycle, counting imports inside
functions (a cycle hidden in a function still ties the modules together): the import graph is
built from the source, not from what an import happens to load.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path


import core
import core.rules
from tests.support.helpers import ROOT

UI = {"textual", "rich", "console"}
IO = {"peewee", "psycopg", "sqlite3", "watchdog"}
CORE_MODULES = ["core"] + sorted(m.name for m in pkgutil.walk_packages(core.__path__, prefix="core."))
RULES = sorted(m.name for m in pkgutil.walk_packages(core.rules.__path__, prefix="core.rules."))

PROBE = """
import importlib, json, sys
first = {}
for name in sys.argv[1:]:
    importlib.import_module(name)
    for top in {m.split(".")[0] for m in sys.modules}:
        first.setdefault(top, name)
print(json.dumps(first))
"""


def loaded_by(*modules: str) -> dict[str, str]:
    """Top-level packages present after importing ``modules`` in turn, in one fresh interpreter,
    each with the first module after whose import it was there."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *modules], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_there_are_modules_to_check():
    assert {"core.inbox", "core.store.receiver", "core.signing.audit"} <= set(CORE_MODULES)
    assert {"core.rules.frame", "core.rules.decide", "core.rules.batch"} <= set(RULES)


def test_importing_the_rules_loads_no_store_thread_watch_or_ui_library():
    """Every module of ``core/rules/`` in one interpreter: a library none of them loads together,
    none loads alone; one that appears is named with the module that brought it."""
    found = {top: by for top, by in loaded_by("core.rules", *RULES).items() if top in UI | IO}
    assert not found, f"the rules load {found} (each first there once the module named was imported)"


def test_importing_any_core_module_loads_no_ui():
    found = {top: by for top, by in loaded_by(*CORE_MODULES).items() if top in UI}
    assert not found, f"the core loads {found} (each first there once the module named was imported)"


def test_the_probe_sees_what_a_module_loads():
    """The check can fail, and names the module: a console module is seen loading rich, the
    store loading peewee, and after a module that loads nothing new the one that does is named."""
    assert loaded_by("console.render")["rich"] == "console.render"
    assert loaded_by("core.rules.frame", "core.store.receiver")["peewee"] == "core.store.receiver"
    assert "peewee" not in loaded_by("core.rules.frame")


def modules_under(root: Path, packages: list[str]) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (source file, is a package) for every ``.py`` under ``packages``."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def import_graph(modules: dict[str, tuple[Path, bool]]) -> dict[str, set[str]]:
    """Which of ``modules`` each one imports, anywhere in its file (inside functions too).

    ``from a import b`` is an edge to ``a.b`` when that is a module, else to ``a``;
    relative imports are resolved against the importing module's package.
    """
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    if f"{source}.{alias.name}" in modules:
                        edges.add(f"{source}.{alias.name}")
                    elif source in modules:
                        edges.add(source)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Every set of modules that import each other round a cycle (strongly connected, more than one)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[tuple[str, ...]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative: no recursion limit to meet
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        member = stack.pop()
                        part.append(member)
                        if member == node:
                            break
                    if len(part) > 1:
                        found.append(tuple(sorted(part)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_import_cycle_in_core_or_console():
    graph = import_graph(modules_under(ROOT, ["core", "console"]))
    assert {"core.signing.keys", "console.cli", "core.store.queries"} <= set(graph)
    assert "core.signing.audit" in graph["core.signing.operators"]  # imports inside functions are seen
    found = cycles(graph)
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_cycle_check_can_fail(tmp_path):
    """A package whose modules import each other, one of them inside a function, is named."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def late():\n    from .. import c\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    (pkg / "d.py").write_text("from . import a\n")  # imports into the cycle, is not part of it
    graph = import_graph(modules_under(tmp_path, ["pkg"]))
    assert cycles(graph) == [("pkg.a", "pkg.c", "pkg.sub.b")]
    assert cycles({"x": {"y"}, "y": {"z"}, "z": set()}) == []
