"""Failed unlocks: each one a line in the home's log, a growing wait after five in a row, and one
attempt per operator at a time.

A wrong passphrase anywhere (the console's dialog, the browser, the command
line) is written to ``logs/receiver.log`` with the operator, where and when,
never the passphrase. The count of failures in a row per operator is kept in
``operators/unlock-failures.json`` so a restart does not reset it; from the
fifth on, the next attempt (right or wrong) first waits ``2 ** (n - 5)``
seconds after the last failure, up to ``WAIT_MAX``. A good unlock clears it.

The wait only slows guessing if guesses cannot run side by side: each attempt
takes its operator's turn first, an exclusive ``flock`` on
``run/unlock-NAME.lock`` held by whichever process (or thread) has it, and
reads the count, serves the wait and tries the passphrase while holding it.
Ten parallel guesses therefore wait one after another, each as long as the
failures before it ask for. The lock file holds nothing and is kept, beside
the running services' records (no backup carries ``run/``); the kernel drops
the lock when its holder ends, however it ends.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from core.home import LOG_FORMAT, open_private, private_folder, run_dir
from core.i18n import N_

from .keys import ActionError, check_name

FREE_FAILURES = 5
WAIT_MAX = 300.0
STATE_NAME = "unlock-failures.json"
TURNS_KEPT = 20  # when each failed attempt in a row held its turn, the latest ones: guesses' pace at a glance
# The console and the browser serve the wait beforehand, off their store thread (``before_attempt``);
# the attempt itself then runs on that thread, so it never waits long there for another's turn.
TURN_PATIENCE = 5.0
TURN_POLL = 0.05
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


def lock_path(home, name: str) -> Path:
    return run_dir(home) / f"unlock-{check_name(name)}.lock"


def _tell(where: str, announce: Callable[[str], None] | None, words: str) -> None:
    if announce is None and where == "cli":
        announce = _to_stderr
    if announce is not None:
        announce(words)


def _take_turn(home, name: str, where: str, announce, patience: float | None, sleep) -> int:
    """The operator's unlock lock, held; its descriptor. ``patience`` None waits as long as it
    takes (Ctrl-C still stops it: the blocking ``flock`` gives way to the signal)."""
    path = lock_path(home, name)
    try:
        private_folder(path.parent)
        fd = open_private(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise ActionError(N_("cannot open the unlock lock %(path)s: %(reason)s"), path=str(path),
                          reason=exc.strerror or str(exc)) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        words = f"unlock of operator {name} ({where}) waits for another unlock of {name} to finish"
        home_log(home, logging.INFO, words)
        _tell(where, announce, words)
        if patience is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return fd
        deadline = time.monotonic() + patience
        while True:
            sleep(TURN_POLL)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ActionError(N_("another unlock of operator %(name)s is still under way; "
                                         "try again in a moment"), name=name) from None
    except BaseException:
        os.close(fd)
        raise


def _serve_wait(home, name: str, where: str, announce, sleep, patience: float | None) -> float:
    """Wait as long as the failures so far ask for (with the turn held); the seconds waited."""
    failures, last = _entry(_update(home, lambda state: None), name)
    remaining = last + wait_after(failures) - time.time()
    if failures < FREE_FAILURES or remaining <= 0:
        return 0.0
    if patience is not None and remaining > patience:
        raise ActionError(N_("unlock of operator %(name)s must wait %(seconds)s s more: "
                             "%(failures)s failed unlocks in a row; try again then"),
                          name=name, seconds=f"{remaining:.0f}", failures=failures)
    words = (f"unlock of operator {name} ({where}) waits {remaining:.0f} s: "
             f"{failures} failed unlocks in a row")
    home_log(home, logging.WARNING, words)
    _tell(where, announce, words)
    sleep(remaining)
    return remaining


@contextmanager
def turn(home, name: str, where: str, announce: Callable[[str], None] | None = None,
         sleep: Callable[[float], None] = time.sleep) -> Iterator[float]:
    """Hold operator ``name``'s turn to unlock, the wait for earlier failures served; yields when
    the turn began (for ``failed``). On the command line it waits as long as it takes; in the
    console or the browser (which waited in ``before_attempt`` already) only briefly, else the
    attempt is refused in one line and nothing is tried."""
    patience = None if where == "cli" else TURN_PATIENCE
    fd = _take_turn(home, name, where, announce, patience, sleep)
    try:
        began = time.time()
        _serve_wait(home, name, where, announce, sleep, patience)
        yield began
    finally:
        os.close(fd)


def before_attempt(home, name: str, where: str, announce: Callable[[str], None] | None = None,
                   sleep: Callable[[float], None] = time.sleep) -> float:
    """Wait, off the caller's store thread, for the turn and as long as the failures so far ask
    for; returns the seconds of that wait (0 when none). The attempt itself takes the turn again
    (``turn``), so a failure meanwhile elsewhere still counts.

    The wait is logged and told through ``announce`` (by default, on the command
    line, one line on stderr) before it starts.
    """
    if not Path(home.operators).is_dir():  # no operators folder yet: nothing has failed
        return 0.0
    fd = _take_turn(home, name, where, announce, None, sleep)
    try:
        return _serve_wait(home, name, where, announce, sleep, None)
    finally:
        os.close(fd)


def unlocking(name: str, where: str) -> None:
    """Say that the slow part starts, where a person watches: a terminal on the command line."""
    if where == "cli" and sys.stderr is not None and sys.stderr.isatty():
        print(f"unlocking {name}'s key...", file=sys.stderr, flush=True)


def _to_stderr(words: str) -> None:
    print(f"ussd-console: {words}", file=sys.stderr, flush=True)


def _turns(state: dict, name: str) -> list:
    got = state.get(name)
    turns = got.get("turns") if isinstance(got, dict) else None
    if not isinstance(turns, list):
        return []
    return [t for t in turns if isinstance(t, list) and len(t) == 2
            and all(isinstance(x, (int, float)) for x in t)]


def failed(home, name: str, where: str, began: float | None = None) -> int:
    """Count and log a failed unlock; returns the failures in a row now. ``began`` (when the
    attempt's turn began) is kept with the end, the latest ``TURNS_KEPT``."""
    now = time.time()

    def bump(state: dict) -> dict:
        failures, _ = _entry(state, name)
        turns = _turns(state, name)
        if began is not None:
            turns = [*turns, [began, now]][-TURNS_KEPT:]
        state[name] = {"failures": failures + 1, "last": now, "turns": turns}
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
