"""The command line run in this process: ``console.cli.main`` with its output captured.

A test that is about what a command says or does, not about the process boundary (a start, a
signal, an exit under a real terminal), runs the command here instead of starting Python
again: a start costs more CPU than most commands spend on their work. The result reads like
``subprocess.run``'s (``returncode``, ``stdout``, ``stderr``), so a test reads the same words.

The command sees what a started one would: no terminal on stdin, stdout or stderr; Rich output
wraps at 80 columns, as to a pipe (``COLUMNS=80`` unless the test gives its own); warnings
logged to stderr as the command line's ``basicConfig`` would print them; an argparse error or
``--help`` as its exit code; an escaping exception as a traceback on stderr and exit 1. What a
command may change for the process is put back after it: the environment, the working folder,
the umask, the SIGINT and SIGTERM handlers, the ``ussd`` loggers' handlers and levels.
"""

from __future__ import annotations

import argparse

import contextlib
import io
import logging
import os
import signal
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"  # the command line's own (console/cli.py)
WIDTH = "80"  # what Rich uses for a pipe, which a started command's output is


@dataclass
class Ran:
    """One command's outcome, as ``subprocess.CompletedProcess`` names it."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


class _Stream(io.TextIOWrapper):
    """A text stream over bytes (``.buffer`` too, as a pipe has), never a terminal."""

    def __init__(self, data: bytes = b""):
        super().__init__(io.BytesIO(data), encoding="utf-8", errors="replace", newline=None, write_through=True)

    def isatty(self) -> bool:
        return False

    def text(self) -> str:
        self.flush()
        return self.buffer.getvalue().decode("utf-8", "replace")


@contextlib.contextmanager
def _kept():
    """Put back what a command may change for the whole process."""
    environ = dict(os.environ)
    cwd = os.getcwd()
    umask = os.umask(0o077)
    os.umask(umask)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    loggers = {name: (lg.handlers[:], lg.level, lg.propagate)
               for name, lg in [("", logging.getLogger()), ("ussd", logging.getLogger("ussd"))]}
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(cwd)
        os.umask(umask)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        for name, (hs, level, propagate) in loggers.items():
            lg = logging.getLogger(name or None)
            lg.handlers[:] = hs
            lg.setLevel(level)
            lg.propagate = propagate


def run_cli(*argv: str, input: str | None = None, env: dict[str, str] | None = None,
            cwd: str | os.PathLike | None = None, umask: int | None = None) -> Ran:
    """``ussd-console ARGV...`` in this process; ``input`` is its stdin, ``env`` added to its environment,
    ``umask`` the one it starts under (as a caller's shell would give it)."""
    from console.cli import main

    args = [str(a) for a in argv]
    stdin, stdout, stderr = _Stream((input or "").encode("utf-8")), _Stream(), _Stream()
    with _kept():
        os.environ["COLUMNS"] = WIDTH
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        if umask is not None:
            os.umask(umask)
        said = logging.StreamHandler(stderr)  # what basicConfig gives a started command
        said.setFormatter(logging.Formatter(LOG_FORMAT))
        said.setLevel(logging.WARNING)
        logging.getLogger().addHandler(said)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr), _stdin(stdin):
            try:
                code = main(args)
            except SystemExit as exc:  # argparse: an error (2) or --help (0)
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Exception:  # noqa: BLE001 - as a started command would: a traceback and exit 1
                traceback.print_exc(file=stderr)
                code = 1
    return Ran(args, code, stdout.text(), stderr.text())


@contextlib.contextmanager
def _stdin(stream):
    before = sys.stdin
    sys.stdin = stream
    try:
        yield
    finally:
        sys.stdin = before


def cli(home, *argv: str, **kw) -> Ran:
    """``ussd-console --home HOME ARGV...`` in this process."""
    return run_cli("--home", str(getattr(home, "root", home)), *argv, **kw)


def every_parser(parser=None, path=()):
    """(command path, parser) for the command line and every subcommand, depth first."""
    from console.cli import build_parser

    parser = parser or build_parser()
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from every_parser(sub, (*path, name))
