"""The operator's first hour on the command line (issue 16): mistakes that looked like data loss,
tables at 80 columns, help, and wording. Each test runs the real command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import ROOT, frame


def ussd(*argv, cwd, env=None, columns=80, input=None) -> subprocess.CompletedProcess:
    """``ussd-console ...`` as an operator runs it: from a folder of their own, 80 columns wide."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("USSD_CONSOLE_HOME", "USSD_CONSOLE_DB")}
    full_env.update({"COLUMNS": str(columns), "PYTHONPATH": str(ROOT), **(env or {})})
    return subprocess.run([sys.executable, "-m", "console.cli", *argv], cwd=cwd, env=full_env, input=input,
                          capture_output=True, text=True, timeout=120)


def one_line_error(proc) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


# -- 1. reading commands never create a home --------------------------------------------------
def test_a_mistyped_home_is_an_error_and_creates_nothing(tmp_path):
    err = one_line_error(ussd("--home", "./ussd-hoem", "status", cwd=tmp_path))
    assert "no home at" in err and str(tmp_path / "ussd-hoem") in err and "ingest" in err
    assert list(tmp_path.iterdir()) == []


def test_a_deep_missing_home_creates_no_folder(tmp_path):
    missing = tmp_path / "nonexistent" / "deep" / "x"
    for argv in (["status"], ["cases"], ["quarantine"], ["operator", "list"], ["audit", "verify"],
                 ["retention", "show"], ["rejects"], ["ranking", "--csv"]):
        err = one_line_error(ussd("--home", str(missing), *argv, cwd=tmp_path))
        assert str(missing) in err
    assert not (tmp_path / "nonexistent").exists()


def test_status_in_a_random_folder_creates_no_data_folder(tmp_path):
    err = one_line_error(ussd("status", cwd=tmp_path))
    assert str(tmp_path / "data") in err
    assert list(tmp_path.iterdir()) == []


def test_a_missing_db_file_named_by_db_is_not_created(tmp_path):
    (tmp_path / "home").mkdir()
    err = one_line_error(ussd("--home", "home", "--db", str(tmp_path / "typo.db"), "status", cwd=tmp_path))
    assert "no store at" in err
    assert not (tmp_path / "typo.db").exists()


def test_a_writing_command_creates_the_home_with_a_one_line_notice(tmp_path):
    feed = tmp_path / "feed.txt"
    feed.write_text("k-1 " + frame(1, "A", "MED", 1, 1) + "\n")
    proc = ussd("--home", "new/home", "ingest", str(feed), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == f"ussd-console: created a new home at {tmp_path / 'new' / 'home'}"
    assert (tmp_path / "new" / "home" / "receiver.db").is_file()
    again = ussd("--home", "new/home", "status", cwd=tmp_path)  # the home now exists: no notice, no error
    assert again.returncode == 0 and again.stderr == ""
