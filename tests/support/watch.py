"""A real ``ussd-console watch`` for a test: started, waited for, signalled."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.helpers import ROOT
from tests.support.waiting import wait_for

_watchers = itertools.count()


class Watcher:
    """``ussd-console watch`` in a subprocess, its stderr in a file (a full pipe would stall it)."""

    def __init__(self, home, tmp_path: Path, *flags: str, env: dict[str, str] | None = None):
        self.home = home
        self.err_path = tmp_path / f"watch-stderr-{next(_watchers)}.txt"
        self._err = open(self.err_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "console.cli", "watch", "--home", str(home.root), *flags],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=self._err, env={**os.environ, **(env or {})},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # Ctrl-C as at a terminal
        )
        log = home.logs / "receiver.log"
        started = log.read_text().count("watching ") if log.exists() else 0
        wait_for(lambda: self.proc.poll() is not None
                 or (log.exists() and log.read_text().count("watching ") > started), timeout=60, what="watch to start")
        assert self.proc.poll() is None, self.stderr()

    def stderr(self) -> str:
        if not self._err.closed:
            self._err.flush()
        return self.err_path.read_text()

    def signal(self, sig) -> int:
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=60)
        self._err.close()
        return code
