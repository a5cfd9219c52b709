"""A console whose terminal goes away closes, even when its parent keeps the hang-up to itself.

``make demo`` and ``make run`` put make between the terminal and the console: when
an SSH session drops, make takes the hang-up signal and the console only finds its
terminal ended. The real console runs here on a pseudo-terminal with the hang-up
signal ignored, as under make; closing the terminal's other end must end it.
"""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]


def test_the_console_closes_when_its_terminal_hangs_up(tmp_path):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "console.cli", "demo"], stdin=slave, stdout=slave, stderr=slave, cwd=tmp_path,
        env=env, start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    os.close(slave)
    shown = bytearray()

    def drain() -> None:  # the screen's bytes, read so the console never waits on a full terminal
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            shown.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        assert wait_for(lambda: b"Ranking" in shown or proc.poll() is not None, what="the console on screen")
        assert proc.poll() is None, bytes(shown[-2000:])
        os.close(master)  # the terminal goes away
        master = -1
        proc.wait(timeout=60)
        assert proc.returncode == 129
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if master >= 0:
            os.close(master)
