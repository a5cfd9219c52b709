"""A real ``watch`` under a given umask, and the command line at 1000 columns (no line wraps), for the
tests of the files the receiver makes in its home."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from core.home import Home
from tests.support.cli import Ran, run_cli
from tests.support.helpers import ROOT
from tests.support.waiting import wait_for


def cli(home: Home, *args: str, umask: int | None = None) -> Ran:
    return run_cli("--home", str(home.root), *args, env={"COLUMNS": "1000"}, umask=umask)


class Watch:
    """A real ``watch`` under a given umask, its stderr kept in a file."""

    def __init__(self, home: Home, tmp_path: Path, umask: int | None = None, wait: bool = True):
        self.home = home
        self.err_path = tmp_path / "watch-stderr.txt"
        self._err = open(self.err_path, "w")

        def child():
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            if umask is not None:
                os.umask(umask)

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "console.cli", "watch", "--home", str(home.root), "--sweep-interval", "0.2",
             "--settle-time", "0.1"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=self._err, preexec_fn=child)
        if wait:
            wait_for(lambda: self.proc.poll() is not None or "watching " in self.stderr(), what="watch to start")
            assert self.proc.poll() is None, self.stderr()

    def stderr(self) -> str:
        if not self._err.closed:
            self._err.flush()
        return self.err_path.read_text()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:  # never leave a receiver behind a failed test
            self.proc.kill()
            code = self.proc.wait(timeout=60)
        self._err.close()
        return code

    def exit_code(self) -> int | None:
        """Its exit code once it stops by itself, None (and it is stopped) if it keeps running."""
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.stop()
            return None


def status_json(home: Home) -> dict:
    done = cli(home, "status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
