"""The two tiers of the suite: which tests start a real process (the ``process`` marker).

`make check` runs the rest (``-m "not process"``), in this one interpreter per worker, for the
edit-test loop; `make test` runs everything. A test is in the process tier when:

- its module is one of ``PROCESS_MODULES``: tests about the process boundary, kept on purpose
  (the first hour, Ctrl-C, SIGKILL, the installed wheel, tmux, two watchers, the HTTP listener...);
- or it asks for one of ``PROCESS_FIXTURES`` (a PostgreSQL server, a real ``watch``), or runs
  on the PostgreSQL side of ``new_store`` (``PROCESS_PARAMS``);
- or the test, or a test helper it reaches (a fixture, a function or class of ``tests`` or
  ``tools``, followed through the names each one uses), starts a process: its source names one
  of ``PROCESS_WORDS``.

So a new test is placed by what it does, with nothing to list; ``pytest --collect-only -m
process`` shows the tier.
"""

from __future__ import annotations

import importlib
import inspect
import io
import re
import sys
import textwrap
import tokenize

import pytest

# Whole modules about the process boundary: each test in them starts a real process on purpose.
PROCESS_MODULES = {
    "tests.test_cli_first_hour",     # the first hour at a real terminal's command line, Ctrl-C
    "tests.test_inbox_watch_cli",    # a real `watch`: Ctrl-C and SIGTERM mid-file
    "tests.test_crash",              # SIGKILL of a real `watch`
    "tests.test_crash_harness",      # the crash harness's real watchers
    "tests.test_installed_wheel",    # the installed wheel
    "tests.test_console_tour_tmux",  # the console in tmux
    "tests.test_console_terminal",   # the console on a pseudo-terminal
    "tests.test_two_watchers",       # two watchers on one store
    "tests.test_gateway_listener",   # the HTTP listener of `watch --listen`
    "tests.test_browser",            # serve in headless Chromium
    "tests.test_serve_security",     # serve, its sessions
    "tests.test_serve_sessions",
    "tests.test_layering",           # each import in a fresh interpreter
    "tests.test_cli_startup",        # what a command loads, in a fresh interpreter
    "tests.test_concurrency",        # races between processes on one store
    "tests.test_concurrent_signing",
}

# Fixtures that start a server or a process for the test.
PROCESS_FIXTURES = {"pg_url", "watcher"}

# Parametrized fixtures whose one parameter does: `new_store` (and `receiver` on it) on PostgreSQL.
PROCESS_PARAMS = {("new_store", "postgres")}
PARAMETRIZED = {name for name, _ in PROCESS_PARAMS}

# Words in a test's or a helper's source that start a process (or a server on PostgreSQL).
PROCESS_WORDS = re.compile(r"\bsubprocess\b|\bPopen\b|sys\.executable|\bpty\b|\bos\.fork\b|multiprocessing"
                           r"|fresh_schema_url|\btmux\b")

_OWN = ("tests", "tools")


def _own(obj) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] in _OWN


# What each test and helper's code says, read once per run: the suite's tests reach the same few
# hundred helpers (fixtures, the CLI runner, the sample store) over and over, and reading and
# tokenizing their source again for each of 1,400 tests was most of what a worker spent collecting.
_READ: dict[int, tuple[object, bool, list[object]]] = {}


def _read(obj) -> tuple[bool, list[object]]:
    """Whether ``obj``'s own code (``_code``) starts a process, and the suite's functions and
    classes it names: its module's globals by those names, and what its body imports from the
    suite's own packages."""
    known = _READ.get(id(obj))
    if known is not None and known[0] is obj:
        return known[1], known[2]
    text, names = _code(obj)
    module = sys.modules.get(getattr(obj, "__module__", ""), None)
    found = [getattr(module, name, None) if module is not None else None for name in names]
    found += _imported_inside(text)
    found = [value for value in found if (inspect.isfunction(value) or inspect.isclass(value)) and _own(value)]
    _READ[id(obj)] = (obj, bool(PROCESS_WORDS.search(text)), found)
    return _READ[id(obj)][1], found


def _code(obj) -> tuple[str, set[str]]:
    """The code of ``obj`` without its comments and docstrings (words there start nothing), and the
    names it uses (not the words inside its strings)."""
    try:
        text = textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        return "", set()
    kept, names, line_start = [], set(), True
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and line_start):
                continue
            if tok.type == tokenize.NAME:
                names.add(tok.string)
            if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                kept.append(tok.string)
            line_start = tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL) and (
                line_start or tok.type != tokenize.NL)
    except (tokenize.TokenError, IndentationError):
        return text, set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    return " ".join(kept), names


def reaches_process(obj, seen: set[int]) -> bool:
    """Whether ``obj`` (a function or class of the tests) or what it names starts a process."""
    obj = inspect.unwrap(obj) if callable(obj) else obj
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    starts, named = _read(obj)
    if starts:
        return True
    for value in named:
        if reaches_process(value, seen):
            return True
    return False


# ``from tools.perf_probe import measure`` inside a test's body: its names are not the module's.
_LOCAL_IMPORT = re.compile(r"\bfrom ((?:tests|tools)(?: \. \w+)*) import (?:\( )?(\w+(?: as \w+)?(?: , \w+(?: as \w+)?)*)")


def _imported_inside(text: str) -> list[object]:
    """What a body's own ``from tests... / tools... import`` lines bring in (already imported, or
    importable: the suite's own helpers start nothing on import)."""
    values = []
    for dotted, listed in _LOCAL_IMPORT.findall(text):
        try:
            imported = importlib.import_module(dotted.replace(" ", ""))
        except ImportError:
            continue
        for part in listed.split(","):
            name = part.split(" as ")[0].strip()
            values.append(getattr(imported, name, None))
    return values


def starts_process(item) -> bool:
    module = item.module.__name__ if getattr(item, "module", None) else ""
    if module in PROCESS_MODULES:
        return True
    names = set(getattr(item, "fixturenames", ()))
    if names & PROCESS_FIXTURES:
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    if any(params.get(name) == value for name, value in PROCESS_PARAMS):
        return True
    seen: set[int] = set()
    if reaches_process(item.obj, seen):
        return True
    for name in names - PARAMETRIZED:
        for fixturedef in item._fixtureinfo.name2fixturedefs.get(name, ()):
            if _own(fixturedef.func) and reaches_process(fixturedef.func, seen):
                return True
    return False


def mark(items) -> None:
    for item in items:
        if starts_process(item):
            item.add_marker(pytest.mark.process)
