"""The demo in a real terminal (tmux, 80x24, NO_COLOR): an .xlsx export outlives the demo home.

The demo removes its throwaway home when it quits; what the operator exported stays, whatever its
format, and the console says where. Driven by keys in tmux, as a newcomer would.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


class Tmux:
    def __init__(self, command: str, env: dict[str, str]):
        self.name = f"ussd-tour-{uuid.uuid4().hex[:8]}"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", "80", "-y", "24",
                        f"env {exports} {command}"], check=True, cwd=ROOT)

    def screen(self) -> str:
        out = subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True)
        return out.stdout

    def keys(self, *keys: str) -> None:
        for key in keys:
            subprocess.run(["tmux", "send-keys", "-t", self.name, key], check=True)

    def alive(self) -> bool:
        return subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True).returncode == 0

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def test_quitting_the_demo_keeps_an_xlsx_export_and_says_where(tmp_path):
    done = tmp_path / "done"
    # The console draws on stderr, and the demo says where the exports went there after it closes:
    # both are read off the terminal itself, which stays open a while after the demo ends.
    script = f"{shlex.quote(sys.executable)} -m console.cli demo --pace 0.05; touch {shlex.quote(str(done))}; sleep 120"
    command = f"sh -c {shlex.quote(script)}"
    term = Tmux(command, {"TMPDIR": str(tmp_path), "NO_COLOR": "1", "TERM": "xterm-256color",
                          "PATH": os.environ.get("PATH", "")})
    try:
        wait_for(lambda: "1 Cases" in term.screen(), what="the demo console")
        term.keys("e")
        wait_for(lambda: "(•) CSV" in term.screen(), what="the export dialog")
        term.keys("Tab", "Down")  # the view list has the keyboard first; Tab goes to the formats
        wait_for(lambda: "(•) XLSX" in term.screen() and "( ) CSV" in term.screen(), what="XLSX chosen by a mark")
        term.keys("Enter")
        wait_for(lambda: list(tmp_path.glob("ussd-demo-*/exports/cases-*.xlsx")), what="the .xlsx export")
        term.keys("q")
        wait_for(lambda: "Quit the console?" in term.screen(), what="the quit dialog")
        assert "exported (CSV and .xlsx) is kept in" in term.screen(), term.screen()
        term.keys("y")
        wait_for(done.exists, what="the demo to end")
        (xlsx,) = tmp_path.glob("ussd-demo-*/exports/cases-*.xlsx")
        message = "".join(term.screen().split())  # a long path wraps at 80 columns
        assert f"keptin{xlsx.parent}" in message and xlsx.name in message, term.screen()
    finally:
        term.kill()
    assert not (xlsx.parent.parent / "receiver.db").exists()  # the rest of the demo home is gone
