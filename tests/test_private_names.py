"""No module of ``core/`` or ``console/`` reaches into another package's private names, and no
command module of ``console/commands/`` into another command module's.

A name that starts with one underscore is its module's own business: within a package it may be
shared, across packages it would tie one package to the insides of another. Read from the source
(``ast``), both ``from X import _name`` and ``module._name`` on an imported module count, imports
inside functions too. The check is run on made-up modules as well, to show it can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.helpers import ROOT


# gettext's names (core.i18n): public by the convention every translation tool extracts by.
GETTEXT = {"_", "N_"}


def sources(root: Path) -> dict[str, tuple[str, bool]]:
    """Every module of ``core`` and ``console``: name -> (source, whether it is a package)."""
    out = {}
    for top in ("core", "console"):
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            package = parts[-1] == "__init__"
            out[".".join(parts[:-1] if package else parts)] = (path.read_text(encoding="utf-8"), package)
    return out


def private_uses(modules: dict[str, tuple[str, bool]]) -> list[str]:
    """Each use of a private name that crosses a package, or one command module's use of another's."""

    def package(name: str) -> str:
        return name if modules[name][1] else name.rsplit(".", 1)[0]

    def origin(name: str, node: ast.ImportFrom) -> str:
        if node.level == 0:
            return node.module or ""
        base = package(name).split(".")
        base = base[:len(base) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))

    found = []
    for name, (text, _is_package) in modules.items():
        tree = ast.parse(text)
        bound: dict[str, str] = {}  # a local name -> the module it names
        uses: list[tuple[str, str, int]] = []  # (owner module, private name, line)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                src = origin(name, node)
                for alias in node.names:
                    if f"{src}.{alias.name}" in modules:
                        bound[alias.asname or alias.name] = f"{src}.{alias.name}"
                    elif src in modules:
                        uses.append((src, alias.name, node.lineno))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules and alias.asname:
                        bound[alias.asname] = alias.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
                uses.append((bound[node.value.id], node.attr, node.lineno))
        for owner, attr, line in uses:
            if not attr.startswith("_") or attr.startswith("__") or owner == name or attr in GETTEXT:
                continue
            commands = name.startswith("console.commands.") and owner.startswith("console.commands.")
            if package(owner) != package(name):
                found.append(f"{name}:{line} imports {owner}.{attr}, a private name of another package")
            elif commands:
                found.append(f"{name}:{line} imports {owner}.{attr}, a private name of another command module")
    return sorted(found)


def test_no_module_uses_a_private_name_of_another_package_or_command():
    modules = sources(ROOT)
    assert {"core.signing.audit", "console.commands.pending", "core.config"} <= set(modules)
    assert private_uses(modules) == []


def test_the_check_names_each_kind_of_reach():
    modules = {
        "core": ("", True),
        "core.config": ("def _check(): pass\n", False),
        "core.signing": ("", True),
        "core.signing.audit": ("def _columns(): pass\n", False),
        "core.signing.held": ("from . import audit\nx = audit._columns()\n", False),  # same package: fine
        "core.backup": ("", True),
        "core.backup.config": ("from core.config import _check\n", False),
        "core.backup.verify": ("def f():\n    from ..signing import audit\n    return audit._columns()\n", False),
        "console": ("", True),
        "console.commands": ("", True),
        "console.commands.operators": ("def _passphrase(): pass\n", False),
        "console.commands.cases": ("from .operators import _passphrase\n", False),
        "console.commands.pending": ("from . import operators as ops\nops._passphrase()\n", False),
        "console.commands.audit": ("from core.signing.audit import __doc__, verify\n", False),
    }
    command, package = "a private name of another command module", "a private name of another package"
    assert private_uses(modules) == [
        f"console.commands.cases:1 imports console.commands.operators._passphrase, {command}",
        f"console.commands.pending:2 imports console.commands.operators._passphrase, {command}",
        f"core.backup.config:1 imports core.config._check, {package}",
        f"core.backup.verify:3 imports core.signing.audit._columns, {package}",
    ]
