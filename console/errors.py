"""Errors a command raises to stop with one line for the operator, and the quiet stop when
whoever reads its output has gone."""

from __future__ import annotations

import os
import sys
from typing import Mapping, NoReturn

from core.rules.text import Said, escape_text


class CommandError(Exception):
    """A command cannot run; the message is the one line the operator sees, as
    ``core.rules.text.said`` gives it: outside text to the command line, escaped where shown (an
    accented letter as ``\\xe9``), unless it is a ``Said`` (``told`` makes one): then it is our words in
    the operator's language, shown as they are, with the outside text in it escaped already."""

    @classmethod
    def told(cls, words: str, ours: Mapping[str, object] | None = None, **outside: object) -> CommandError:
        """``words`` (a message through ``_()``, its placeholders still to fill) filled with ``ours``
        (numbers and words of our own) as they are and with ``outside`` (paths, names, another error's
        words) escaped, as a ``Said``."""
        values = {**{k: escape_text(v, 300) for k, v in outside.items()}, **(ours or {})}
        return cls(Said(words % values if values else words))


class StdoutClosed(Exception):
    """Whoever read stdout has gone (``| head`` has its lines): not an error; the command stops."""


def stdout_closed() -> NoReturn:
    """Point stdout at /dev/null, so nothing buffered fails again on the way out, and stop quietly
    (``ussd-console`` exits 0, as a ``| head`` pipeline expects of a reader that stopped early)."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise StdoutClosed
