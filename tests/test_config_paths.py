"""A relative path in config.toml is relative to the home, whatever folder a command is started in:
``backup`` and ``status`` from anywhere agree on ``[backup] dir``, and a relative alert program runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.home import Home
from tests.support.signing import A1, B2, add_operators, ingest


def run(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console.cli", *argv], cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ), timeout=300)


@pytest.fixture
def home(tmp_path) -> Home:
    h = Home(tmp_path / "home").ensure()
    add_operators(h, tmp_path, "alice")
    ingest(h, tmp_path, [A1, B2])
    return h


@pytest.fixture
def elsewhere(tmp_path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


def test_a_relative_backup_dir_is_in_the_home_whatever_folder_the_command_starts_in(home, elsewhere):
    home.config.write_text('[backup]\ndir = "bk"\n')
    proc = run("--home", str(home.root), "--json", "backup", cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    file = Path(json.loads(proc.stdout)["file"])
    assert file.parent == home.root / "bk"
    assert not (elsewhere / "bk").exists()
    proc = run("--home", str(home.root), "backup", "verify", str(file), cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    for cwd in (home.root, elsewhere, Path("/")):
        status = json.loads(run("--home", str(home.root), "--json", "status", cwd=cwd).stdout)["backup"]
        assert status["last_verified"] is not None, cwd
        assert Path(status["last_verified"]["file"]) == file, cwd
        text = run("--home", str(home.root), "status", cwd=cwd).stdout.replace("\n", "")
        assert "backups: last verified" in text and file.name in text, cwd


def test_a_relative_alert_program_is_in_the_home(home, elsewhere):
    program = home.root / "bin" / "notify"
    program.parent.mkdir()
    got = home.root / "got.json"
    program.write_text(f"#!/bin/sh\ncat > {got}\n")
    program.chmod(0o700)
    home.config.write_text('[alerts]\ncommand = "bin/notify --camp kakuma"\n')
    proc = run("--home", str(home.root), "alerts", "test", cwd=elsewhere)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(got.read_text())["kind"] == "test"
