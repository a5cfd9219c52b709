"""Errors a command raises to stop with one line for the operator, and the quiet stop when
whoever reads its output has gone."""

from __future__ import annotations

import os
import sys
from typing import NoReturn


class CommandError(Exception):
    """A command cannot run; the message is the one line the operator sees."""


class StdoutClosed(Exception):
    """Whoever read stdout has gone (``| head`` has its lines): not an error; the command stops."""


def stdout_closed() -> NoReturn:
    """Point stdout at /dev/null, so nothing buffered fails again on the way out, and stop quietly
    (``ussd-console`` exits 0, as a ``| head`` pipeline expects of a reader that stopped early)."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise StdoutClosed
