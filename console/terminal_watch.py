"""Close the console when its terminal hangs up.

A parent that keeps the hang-up signal to itself (``make demo``, ``make run``) leaves the console
reading an ended terminal, which Textual then polls without end: a dropped SSH session would
leave it spinning a core and running the inbox with nobody watching.
"""

from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger("ussd.console")

TERMINAL_CHECK_SECONDS = 2.0  # how soon a console whose terminal went away (a dropped SSH session) closes


def terminal_fd() -> int | None:
    """The terminal the console reads its keys from, or None (a pipe, ``serve``, a test)."""
    try:
        fd = sys.__stdin__.fileno()
    except (AttributeError, ValueError, OSError):
        return None
    return fd if os.isatty(fd) else None


def watch_terminal(app) -> None:
    """Check the app's terminal every ``TERMINAL_CHECK_SECONDS``; none to watch headless or on a pipe."""
    fd = None if app.is_headless else terminal_fd()
    if fd is None:
        return

    def check() -> None:
        if not os.isatty(fd):
            log.warning("the terminal went away; closing the console")
            app.exit(return_code=129)

    app.set_interval(TERMINAL_CHECK_SECONDS, check)
