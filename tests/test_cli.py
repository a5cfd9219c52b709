"""The command line: JSON for scripts, one-line errors, exit codes."""

import json
import subprocess
import sys
from pathlib import Path

from console.cli import main
from tests.support.helpers import ROOT, frame
from tests.support.cli import Ran, run_cli

from console.demo.gateway_sim import SAMPLES


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ingest_samples_json_and_status(capsys, home):
    files = [str(SAMPLES / name) for name in (
        "01-session.txt", "02-full-resend.txt", "03-partial-resend.txt", "04-conflict.txt", "05-bad-lines.txt")]
    code, out, err = run(capsys, "--home", str(home.root), "ingest", *files, "--json")
    assert code == 0, err
    verdicts = [json.loads(line) for line in out.splitlines()]
    assert {"frame_id", "outcome", "reason", "file", "line"} <= set(verdicts[0])
    applied = [v for v in verdicts if v["outcome"] == "APPLIED"]
    assert [v["frame_id"] for v in applied] == ["kak01-1", "kak02-2", "kak03-3"]
    assert sum(v["outcome"] == "DUPLICATE" for v in verdicts) == 4
    assert sum(v["outcome"] == "CONFLICT_QUARANTINED" for v in verdicts) == 1
    assert {v["outcome"] for v in verdicts if v["frame_id"] in ("kak04-1", "kak05-1")} == {
        "REJECT_BAD_CRC", "REJECT_BAD_FORMAT"}
    code, out, _ = run(capsys, "--home", str(home.root), "status", "--json")
    status = json.loads(out)
    for key in ("cases", "headcount_total", "duplicates", "conflicts_open", "rejects", "seen_frames", "retention_days"):
        assert key in status
    assert (status["cases"], status["headcount_total"], status["conflicts_open"]) == (3, 23, 1)
    assert status["per_source"]["cli"]["APPLIED"] == 3


def test_people_output_is_escaped(capsys, home, tmp_path):
    hostile = tmp_path / "feed.txt"
    hostile.write_text("[bold]x\x1b[2J H1|1|[red]|MED|3|86|#00\x07\nok-1 " + frame(1, "A", "MED", 1, 1) + "\n")
    code, out, err = run(capsys, "--home", str(home.root), "ingest", str(hostile))
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    for command in ("rejects", "cases", "ranking", "quarantine", "status", "evictions"):
        code, out, err = run(capsys, "--home", str(home.root), command)
        assert code == 0 and "\x1b" not in out, (command, err)


def test_errors_are_one_line_and_non_zero(capsys, home, tmp_path):
    code, out, err = run(capsys, "--home", str(home.root), "ingest", str(tmp_path / "missing.txt"))
    assert code == 2 and err.count("\n") == 1 and "missing.txt" in err and "Traceback" not in err
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    code, out, err = run(capsys, "--home", str(home.root), "ingest", str(binary))
    assert code == 2 and ("not UTF-8" in err or "not a text file" in err) and err.count("\n") == 1
    code, out, err = run(capsys, "--home", str(home.root), "cases", "--sort", "nope")
    assert code == 2 and err.startswith("ussd-console: error:")


def test_locked_store_is_a_clear_error(home, tmp_path):
    """Another process holding the write lock past the busy timeout stops the command cleanly."""
    from core import Receiver

    Receiver(str(home.db)).close()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('BEGIN EXCLUSIVE');"
         "print('locked',flush=True); sys.stdin.read()", str(home.db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # holds the lock until killed, however slow the CLI
    try:
        assert holder.stdout.readline().strip() == "locked"
        feed = tmp_path / "f.txt"
        feed.write_text("k-1 " + frame(1, "A", "MED", 1, 1) + "\n")
        proc = subprocess.run(
            [sys.executable, "-m", "console.cli", "--home", str(home.root), "ingest", str(feed)],
            capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert proc.returncode == 2
        assert "locked" in proc.stderr and "Traceback" not in proc.stderr
    finally:
        holder.kill()
        holder.wait()


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "ussd-console"
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "ingest" in proc.stdout


def cli(home, *argv) -> Ran:
    """``ussd-console`` as an operator runs it, in this process (tests/support/cli.py)."""
    return run_cli("--home", str(home.root), *argv, cwd=ROOT)


def test_ingest_of_anything_but_a_regular_file_is_one_line_and_exit_2(home, tmp_path):
    """A directory, a missing file, a FIFO, in the inbox or outside: one line, exit 2, nothing stored."""
    import os

    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "pipe")
    (home.inbox / "sub").mkdir(parents=True)
    good = tmp_path / "good.txt"
    good.write_text("k-1 " + frame(1, "A", "MED", 1, 1) + "\n")
    for bad in (tmp_path / "folder", tmp_path / "missing.txt", tmp_path / "pipe", home.inbox / "sub",
                home.inbox / "missing.txt", home.inbox):
        proc = cli(home, "ingest", str(good), str(bad))
        lines = proc.stderr.splitlines()
        assert proc.returncode == 2 and len(lines) == 1, (bad, proc.stderr)
        assert lines[0].startswith("ussd-console: error:") and bad.name in lines[0], (bad, lines)
        assert "Traceback" not in proc.stderr and proc.stdout == ""
    # A bad path stops the command before anything is applied: no store was even created (and
    # `status`, a reading command, says so rather than creating one).
    assert not home.db.exists()
    status = cli(home, "status", "--json")
    assert status.returncode == 2 and "no store at" in status.stderr and not home.db.exists()
    assert good.exists() and (home.inbox / "sub").is_dir()


def test_an_os_error_naming_a_descriptor_is_still_one_line(home, capsys, monkeypatch):
    """Some calls (fdopen) put a descriptor number where the file name goes; the handler copes."""
    from console.commands import ingest

    def fails(args, ctx):
        raise IsADirectoryError(21, "Is a directory", 3)

    monkeypatch.setattr(ingest, "cmd_ingest", fails)
    code, out, err = run(capsys, "--home", str(home.root), "ingest", "x.txt")
    assert (code, out) == (2, "") and err == "ussd-console: error: Is a directory: 3\n"
