"""Failed unlocks: each one a line in the home's log, and a growing wait after five in a row.

A wrong passphrase anywhere (the console's dialog, the browser, the command
line) is written to ``logs/receiver.log`` with the operator, where and when,
never the passphrase. The count of failures in a row per operator is kept in
``operators/unlock-failures.json`` so a restart does not reset it; from the
fifth on, the next attempt (right or wrong) first waits ``2 ** (n - 5)``
seconds after the last failure, up to ``WAIT_MAX``. A good unlock clears it.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Callable

from core.home import LOG_FORMAT

FREE_FAILURES = 5
WAIT_MAX = 300.0
STATE_NAME = "unlock-failures.json"
LOGGER = "ussd.signing"

log = logging.getLogger(LOGGER)


def wait_after(failures: int) -> float:
    """Seconds the next attempt waits after ``failures`` failed unlocks in a row."""
    if failures < FREE_FAILURES:
        return 0.0
    return min(WAIT_MAX, 2.0 ** min(failures - FREE_FAILURES, 16))  # capped before it can overflow


def _state_path(home) -> Path:
    return Path(home.operators) / STATE_NAME


def _update(home, change: Callable[[dict], dict | None]) -> dict:
    """Read, change and write the failure counts under a lock; returns the counts before the change."""
    fd = os.open(_state_path(home), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = b""
        while chunk := os.read(fd, 65536):
            raw += chunk
        try:
            state = json.loads(raw) if raw.strip() else {}
        except ValueError:
            state = {}
        if not isinstance(state, dict):
            state = {}
        new = change(dict(state))
        if new is not None and new != state:
            data = json.dumps(new, sort_keys=True).encode("ascii")
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, data)
            os.fsync(fd)
        return state
    finally:
        os.close(fd)


def _entry(state: dict, name: str) -> tuple[int, float]:
    got = state.get(name)
    if not isinstance(got, dict):
        return 0, 0.0
    try:
        return int(got.get("failures", 0)), float(got.get("last", 0.0))
    except (TypeError, ValueError):
        return 0, 0.0


def home_log(home, level: int, message: str) -> None:
    """Append one line to the home's log in its usual format (no handler may be attached here)."""
    record = logging.LogRecord(LOGGER, level, __file__, 0, message, None, None)
    line = logging.Formatter(LOG_FORMAT).format(record) + "\n"
    try:
        Path(home.logs).mkdir(mode=0o700, exist_ok=True)
        fd = os.open(home.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError as exc:
        log.warning("cannot write the home's log %s: %s; %s", home.log_file, exc.strerror, message)


def before_attempt(home, name: str, where: str, announce: Callable[[str], None] | None = None,
                   sleep: Callable[[float], None] = time.sleep) -> float:
    """Wait as long as the failures so far ask for; returns the seconds waited (0 when none).

    The wait is logged and told through ``announce`` (by default, on the command
    line, one line on stderr) before it starts.
    """
    try:
        failures, last = _entry(_update(home, lambda state: None), name)
    except FileNotFoundError:  # no operators folder yet: nothing has failed
        return 0.0
    remaining = last + wait_after(failures) - time.time()
    if failures < FREE_FAILURES or remaining <= 0:
        return 0.0
    words = (f"unlock of operator {name} ({where}) waits {remaining:.0f} s: "
             f"{failures} failed unlocks in a row")
    home_log(home, logging.WARNING, words)
    if announce is None and where == "cli":
        announce = _to_stderr
    if announce is not None:
        announce(words)
    sleep(remaining)
    return remaining


def _to_stderr(words: str) -> None:
    print(f"ussd-console: {words}", file=sys.stderr, flush=True)


def failed(home, name: str, where: str) -> int:
    """Count and log a failed unlock; returns the failures in a row now."""
    now = time.time()

    def bump(state: dict) -> dict:
        failures, _ = _entry(state, name)
        state[name] = {"failures": failures + 1, "last": now}
        return state

    failures = _entry(_update(home, bump), name)[0] + 1
    home_log(home, logging.WARNING, f"failed unlock for operator {name} ({where}): wrong passphrase or damaged "
                                    f"key file, {failures} in a row")
    return failures


def succeeded(home, name: str) -> None:
    """A good unlock: the count starts again."""

    def clear(state: dict) -> dict | None:
        if name not in state:
            return None
        state.pop(name)
        return state

    _update(home, clear)
