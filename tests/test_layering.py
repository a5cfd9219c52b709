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

The packages stand in layers (``LAYERS``): a package imports only packages of a layer below its
own, never one beside it or above it, imports inside functions and names a package exports
lazily (``_LAZY``) counted. The check is run on a bad graph too, to show it can fail.
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


def lazy_exports(modules: dict[str, tuple[Path, bool]]) -> dict[str, dict[str, str]]:
    """Package -> {name: module} for each package whose ``__init__`` names its exports in a
    ``_LAZY`` dict (``core.lazy``): ``from core import Receiver`` imports ``core.receiver``."""
    found: dict[str, dict[str, str]] = {}
    for name, (path, is_package) in modules.items():
        if not is_package:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["_LAZY"]:
                found[name] = {k: v for k, v in ast.literal_eval(node.value).items() if v in modules}
    return found


def import_graph(modules: dict[str, tuple[Path, bool]]) -> dict[str, set[str]]:
    """Which of ``modules`` each one imports, anywhere in its file (inside functions too).

    ``from a import b`` is an edge to ``a.b`` when that is a module, to the module ``a`` names
    ``b`` lazily from, else to ``a``; relative imports are resolved against the importing module's
    package.
    """
    lazy = lazy_exports(modules)
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
                    elif alias.name in lazy.get(source, {}):
                        edges.add(lazy[source][alias.name])
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
    assert "core.signing.audit_models" in graph["core.signing.roles"]  # imports inside functions are seen
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


# The layers, lowest first. A package is a folder of core/ (named by its folder), a module at the
# top of core/ (named in full) or the whole console; each imports only from layers below its own.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core.lazy", "core.urls", "core.config_template", "core.clock", "core.i18n"),  # the standard library alone (and Babel)
    ("rules", "core"),  # the rules, and the package itself (it names its exports lazily)
    ("store",),
    ("core.config", "core.home"),  # the settings read against the store's backends, the home's folders
    ("signing",),
    ("core.receiver",),  # the store handed signing's schema steps and its retention policy
    ("alerts",),  # below the inbox: the inbox service runs the alert deliverer for its own faults
    ("gateways", "inbox"),
    ("ops", "backup"),
    ("report",),  # the situation report reads the health figures and the backups' state
    ("console",),
)


def package_of(module: str, modules: dict[str, tuple[Path, bool]]) -> str:
    """The unit ``LAYERS`` places ``module`` in: its folder under ``core/``, else the module itself."""
    parts = module.split(".")
    if parts[0] != "core":
        return parts[0]
    if len(parts) > 1 and modules.get(f"core.{parts[1]}", (None, False))[1]:
        return parts[1]
    return module


def layer_breaches(graph: dict[str, set[str]], modules: dict[str, tuple[Path, bool]],
                   layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[str]:
    """Each import of a package at or above the importer's own layer (another package), and each
    package ``layers`` does not place, in words."""
    level = {unit: n for n, layer in enumerate(layers) for unit in layer}
    out = [f"{unit} has no layer" for unit in sorted({package_of(m, modules) for m in graph} - set(level))]
    for importer, imported in sorted((a, b) for a, edges in graph.items() for b in edges):
        low, high = package_of(importer, modules), package_of(imported, modules)
        if low != high and low in level and high in level and level[high] >= level[low]:
            where = "beside" if level[high] == level[low] else "above"
            out.append(f"{importer} ({low}) imports {imported} ({high}, {where} it)")
    return out


def test_no_package_imports_one_beside_or_above_it():
    modules = modules_under(ROOT, ["core", "console"])
    graph = import_graph(modules)
    assert {package_of(m, modules) for m in graph} >= {"rules", "store", "signing", "gateways", "inbox", "ops",
                                                       "alerts", "backup", "console", "core.receiver"}
    assert "core.receiver" in graph["console.store_view"]  # ``from core import Receiver``, named lazily, is seen
    breaches = layer_breaches(graph, modules)
    assert not breaches, "layers broken:\n" + "\n".join(breaches)


def test_the_layer_check_can_fail(tmp_path):
    """Made-up packages breaking each rule are named: one importing a package above it inside a
    function, two beside each other, a lazily exported name, and a package with no layer."""
    root = tmp_path / "core"
    for folder in ("low", "mid", "side", "top", "stray"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "low" / "a.py").write_text("def late():\n    from core.top import z\n")  # up, inside a function
    (root / "mid" / "b.py").write_text("from core.side import c\nfrom ..low import a\n")  # beside; down is fine
    (root / "side" / "c.py").write_text("")
    (root / "top" / "__init__.py").write_text('_LAZY = {"thing": "core.top.z"}\n')
    (root / "top" / "z.py").write_text("")
    (root / "stray" / "s.py").write_text("")
    (root / "low" / "d.py").write_text("from core.top import thing\n")  # up, through a lazy name
    modules = modules_under(tmp_path, ["core"])
    graph = import_graph(modules)
    layers = (("core",), ("low",), ("mid", "side"), ("top",))
    assert layer_breaches(graph, modules, layers) == [
        "stray has no layer",
        "core.low.a (low) imports core.top.z (top, above it)",
        "core.low.d (low) imports core.top.z (top, above it)",
        "core.mid.b (mid) imports core.side.c (side, beside it)",
    ]
    fixed = {**graph, "core.low.a": set(), "core.low.d": set(), "core.mid.b": {"core.low.a"}}
    assert layer_breaches(fixed, modules, layers + (("stray",),)) == []

