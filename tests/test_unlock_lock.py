"""One unlock attempt per operator at a time, across processes: parallel guesses each wait their
turn and the wait after failures, Ctrl-C still stops a waiting command, and a terminal is told the
key is being unlocked. Through the real command line, as an attacker or an operator meets it."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from unittest import mock

import pytest

from core.signing import unlock_guard

from tests.support.cli import Ran, run_cli
from tests.support.helpers import ROOT
from tests.support.signing import add_operators, passfile
from tests.support.waiting import wait_for

RETENTION = ("retention", "set", "40", "--operator", "alice", "--reason", "long field trips")


def command(home, *argv: str) -> list[str]:
    return [sys.executable, "-m", "console.cli", "--home", str(home.root), *argv]


def ussd(home, *argv: str) -> Ran:
    """The command in this process, where no real process is the point: no home or store named in
    the environment, as ``environment()`` gives a child."""
    with mock.patch.dict(os.environ):
        for name in ("USSD_CONSOLE_HOME", "USSD_CONSOLE_DB"):
            os.environ.pop(name, None)
        return run_cli("--home", str(home.root), *argv)


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("USSD_CONSOLE_HOME", "USSD_CONSOLE_DB")}
    env["PYTHONPATH"] = str(ROOT)
    return env


class Running:
    """A CLI process whose stderr is read as it comes, so a test can wait for a line of it."""

    def __init__(self, argv: list[str], **popen):
        # Ctrl-C as at a terminal: SIGINT at its default, whatever the test worker inherited.
        self.proc = subprocess.Popen(argv, env=environment(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **popen)
        self.err = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.err += line

    def wait_until_said(self, words: str) -> None:
        wait_for(lambda: words in self.err or self.proc.poll() is not None, what=f"the command to say {words!r}")
        assert words in self.err, (self.proc.returncode, self.err)

    def finish(self) -> tuple[int, str, str]:
        try:
            out = self.proc.stdout.read()
            code = self.proc.wait(timeout=120)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self._reader.join(timeout=60)
        return code, out, self.err


def failure_state(home) -> dict:
    path = home.operators / unlock_guard.STATE_NAME
    return json.loads(path.read_text() or "{}") if path.exists() else {}


def retention_days(home) -> float | None:
    shown = ussd(home, "--json", "retention", "show")
    policy = json.loads(shown.stdout)["policy"] or {}
    return (policy.get("retention_seconds") or 0) / 86400


def hold_the_turn(home, name: str = "alice") -> int:
    """Take operator ``name``'s turn from this test, as another attempt in progress would."""
    path = unlock_guard.lock_path(home, name)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def turn_is_free(home, name: str = "alice") -> bool:
    fd = os.open(unlock_guard.lock_path(home, name), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def open_for_writing(fifo) -> int | None:
    """The FIFO's writing end once its reader is there (the CLI opened it), else None."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return None
        raise


# -- parallel guesses -------------------------------------------------------------------------------------------
def test_parallel_wrong_unlocks_take_turns_and_each_waits_for_the_failures_before_it(home, tmp_path, monkeypatch):
    # A key that takes a moment to try, so unguarded guesses released together would overlap.
    monkeypatch.setenv("USSD_CONSOLE_KDF_ROUNDS", "8")
    add_operators(home, tmp_path, "alice")
    guesses = unlock_guard.FREE_FAILURES + 2  # the last two wait 1 s and 2 s: the test stays short
    # Each guess reads its passphrase from a FIFO: every process is started and waits at its read,
    # then all are given their guess at once, as a script of parallel guesses would.
    fifos = []
    for i in range(guesses):
        fifo = tmp_path / f"guess-{i}"
        os.mkfifo(fifo, 0o600)
        fifos.append(fifo)
    running = [Running(command(home, *RETENTION, "--passphrase-file", str(fifo))) for fifo in fifos]
    try:
        ends = [wait_for(lambda f=f: open_for_writing(f), what=f"a guess to read {f.name}") for f in fifos]
        for i, fd in enumerate(ends):
            os.write(fd, f"wrong guess number {i}\n".encode())
        for fd in ends:
            os.close(fd)
        results = [r.finish() for r in running]
    finally:
        for r in running:
            if r.proc.poll() is None:
                r.proc.kill()
    for code, out, err in results:
        assert code == 2 and "wrong passphrase for operator alice" in err and "Traceback" not in err, err

    entry = failure_state(home)["alice"]
    assert entry["failures"] == guesses
    turns = sorted(entry["turns"])
    assert len(turns) == guesses
    for (began, ended), (next_began, _) in zip(turns, turns[1:]):
        assert began <= ended <= next_began, turns  # each attempt had the turn alone: none overlap
    # Each read the count the one before it left: exactly one waited after 5 failures, one after 6.
    said = "".join(err for _, _, err in results)
    waits = re.findall(r"unlock of operator alice \(cli\) waits \d+ s: (\d+) failed unlocks in a row", said)
    assert sorted(waits) == ["5", "6"], said


# -- Ctrl-C -------------------------------------------------------------------------------------------------------
def test_ctrl_c_stops_a_command_waiting_for_another_unlock_and_frees_nothing_it_did_not_hold(home, tmp_path):
    add_operators(home, tmp_path, "alice")
    held = hold_the_turn(home)
    try:
        waiting = Running(command(home, *RETENTION, "--passphrase-file", passfile(tmp_path, "alice")))
        waiting.wait_until_said("waits for another unlock of alice to finish")
        waiting.proc.send_signal(signal.SIGINT)
        code, out, err = waiting.finish()
        assert code == 130 and "interrupted" in err and "Traceback" not in err, err
        assert not turn_is_free(home)  # the turn is still the holder's
    finally:
        os.close(held)
    assert turn_is_free(home)
    assert "alice" not in failure_state(home)  # nothing was tried
    assert retention_days(home) != 40  # and nothing signed


def test_ctrl_c_stops_a_command_serving_the_wait_and_the_turn_is_free_after(home, tmp_path):
    add_operators(home, tmp_path, "alice")
    state = {"alice": {"failures": 12, "last": time.time(), "turns": []}}  # the next attempt waits 128 s
    (home.operators / unlock_guard.STATE_NAME).write_text(json.dumps(state))
    waiting = Running(command(home, *RETENTION, "--passphrase-file", passfile(tmp_path, "alice")))
    waiting.wait_until_said("12 failed unlocks in a row")
    assert not turn_is_free(home)  # the wait is served holding the turn: no guess slips past it
    waiting.proc.send_signal(signal.SIGINT)
    code, out, err = waiting.finish()
    assert code == 130 and "interrupted" in err and "Traceback" not in err, err
    assert turn_is_free(home)
    assert failure_state(home)["alice"]["failures"] == 12


def test_a_command_waiting_for_the_turn_goes_on_when_it_is_free(home, tmp_path):
    add_operators(home, tmp_path, "alice")
    held = hold_the_turn(home)
    try:
        waiting = Running(command(home, *RETENTION, "--passphrase-file", passfile(tmp_path, "alice")))
        waiting.wait_until_said("waits for another unlock of alice to finish")
        assert waiting.proc.poll() is None
    finally:
        os.close(held)
    code, out, err = waiting.finish()
    assert code == 0, err
    assert "waits for another unlock of operator" not in err
    log = home.log_file.read_text()
    assert "unlock of operator alice (cli) waits for another unlock of alice to finish" in log


# -- the console's attempt never waits long on its store thread --------------------------------------------------
def test_an_attempt_from_the_console_gives_up_its_turn_wait_in_one_line(home, tmp_path, monkeypatch):
    from core import Receiver
    from core.signing.keys import ActionError
    from core.signing.operators import load_signer

    add_operators(home, tmp_path, "alice")
    monkeypatch.setattr(unlock_guard, "TURN_PATIENCE", 0.2)
    held = hold_the_turn(home)
    try:
        with Receiver(str(home.db)) as r, pytest.raises(ActionError, match="another unlock of operator alice"):
            load_signer(home, r, "alice", "alice passphrase", where="console")
    finally:
        os.close(held)
    state = {"alice": {"failures": 9, "last": time.time(), "turns": []}}  # 16 s to wait
    (home.operators / unlock_guard.STATE_NAME).write_text(json.dumps(state))
    with Receiver(str(home.db)) as r, pytest.raises(ActionError, match=r"must wait \d+ s more: 9 failed"):
        load_signer(home, r, "alice", "alice passphrase", where="console")
    assert failure_state(home)["alice"]["failures"] == 9  # nothing was tried


def test_the_lock_file_is_private_and_a_planted_link_is_refused(home, tmp_path):
    add_operators(home, tmp_path, "alice")
    assert ussd(home, *RETENTION, "--passphrase-file", passfile(tmp_path, "alice")).returncode == 0
    lock = unlock_guard.lock_path(home, "alice")
    assert lock.parent == home.root / "run" and (lock.stat().st_mode & 0o777) == 0o600
    lock.unlink()
    target = tmp_path / "elsewhere"
    target.write_text("")
    lock.symlink_to(target)
    proc = ussd(home, "retention", "set", "41", "--operator", "alice", "--reason", "r",
                "--passphrase-file", passfile(tmp_path, "alice"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "cannot open the unlock lock" in proc.stderr and "symlink" in proc.stderr


# -- feedback while it works ---------------------------------------------------------------------------------------
def read_all(fd: int) -> bytes:
    seen = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: every process holding the terminal has ended
            return seen
        if not chunk:
            return seen
        seen += chunk


def test_a_terminal_is_told_the_key_is_being_unlocked_before_the_result(home, tmp_path):
    add_operators(home, tmp_path, "alice")
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(command(home, *RETENTION, "--passphrase-file", passfile(tmp_path, "alice")),
                                env={**environment(), "COLUMNS": "100"}, stdin=subprocess.DEVNULL,
                                stdout=follower, stderr=follower)
        os.close(follower)
        follower = -1
        shown = read_all(leader).decode(errors="replace")
        assert proc.wait(timeout=120) == 0, shown
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert "unlocking alice's key..." in shown
    assert shown.index("About to sign:") < shown.index("unlocking alice's key...") < shown.index("retention is now 40")


def test_a_script_reading_stderr_or_json_sees_no_unlocking_line(home, tmp_path):
    add_operators(home, tmp_path, "alice")
    proc = ussd(home, "--json", *RETENTION, "--passphrase-file", passfile(tmp_path, "alice"))
    assert proc.returncode == 0, proc.stderr
    assert "unlocking" not in proc.stderr and "unlocking" not in proc.stdout
    json.loads(proc.stdout)
