"""The operator's first hour on the command line: mistakes that would look like data loss,
tables at 80 columns, help, and wording. Each test runs the real command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from core.store.ledger import HANDOVER_FRAMES
from tests.support.helpers import ROOT, frame
from tests.support.inbox_helpers import wait_for


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
                 ["retention", "show"], ["rejects"], ["ranking", "--csv"], ["export", "cases"]):
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


# -- 2. Ctrl-C during a large ingest ------------------------------------------------------------
def big_feed(path, n: int):
    path.write_text("".join(f"t{i}-1 {frame(1, 'Site' + str(i % 7), 'MED', 1 + i % 9, i % 100)}\n" for i in range(n)))
    return path


def test_ctrl_c_during_a_big_ingest_says_what_was_committed_and_that_a_rerun_is_safe(tmp_path):
    import signal

    n = 2 * HANDOVER_FRAMES + 5_000  # three calls of the ingest, of at most HANDOVER_FRAMES each
    feed = big_feed(tmp_path / "big.txt", n)
    hold = tmp_path / "hold"
    hold.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("USSD_CONSOLE_HOME", "USSD_CONSOLE_DB")}
    env.update({"PYTHONPATH": str(ROOT), "COLUMNS": "80", "USSD_HOLD_AFTER_COMMIT": str(hold)})
    # Ctrl-C as at a terminal: SIGINT at its default, whatever the test worker inherited (a process
    # started with SIGINT ignored keeps it ignored, as nohup means it to).
    proc = subprocess.Popen([sys.executable, "-m", "console.cli", "--home", "home", "ingest", str(feed)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        # The first batch is committed and the process waits there (or it died: then say why).
        wait_for(lambda: list(hold.glob("*.held")) or proc.poll() is not None, timeout=120,
                 what="the first batch to be committed")
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:  # say what the process was doing, for whoever meets this
            status = Path(f"/proc/{proc.pid}/status").read_text().splitlines()
            raise AssertionError(f"ingest never answered Ctrl-C: {[x for x in status if x.startswith('Sig')]}")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert f"{HANDOVER_FRAMES:,} frames committed before the stop (of {n:,})" in err
    assert "re-running the same command is safe" in err

    again = ussd("--home", "home", "ingest", str(feed), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"{HANDOVER_FRAMES:,}" in again.stdout and "sent again" in again.stdout  # the committed part comes back as duplicates
    status = json.loads(ussd("--home", "home", "status", "--json", cwd=tmp_path).stdout)
    assert status["cases"] == n and status["applied"] == n


# -- a listing piped into a reader that stops early (`| head`) ------------------------------------
def test_a_listing_whose_reader_stops_early_ends_quietly(tmp_path):
    """Far more than a pipe holds, read one line of, then the pipe closed, as `| head -1` does:
    the command stops with status 0 and says nothing, --json or not, like `export --out -`."""
    # 1,000 of each: every listing below writes about 150-300 KB, more than twice what a pipe holds (64 KiB).
    feed = big_feed(tmp_path / "big.txt", 1_000)
    with feed.open("a") as fh:
        fh.writelines(f"bad-{i} H1|{i}|Kakuma1|MED|3\n" for i in range(1_000))
    assert ussd("--home", "home", "ingest", str(feed), cwd=tmp_path).returncode == 0
    env = {k: v for k, v in os.environ.items() if k not in ("USSD_CONSOLE_HOME", "USSD_CONSOLE_DB")}
    env.update({"PYTHONPATH": str(ROOT), "COLUMNS": "80"})
    for argv in (["--json", "cases"], ["--json", "ranking"], ["--json", "rejects"], ["cases"], ["rejects"]):
        proc = subprocess.Popen([sys.executable, "-m", "console.cli", "--home", "home", *argv, "--limit", "5000"],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            first = proc.stdout.readline()
            proc.stdout.close()  # the reader is gone; the command has most of its output still to write
            _out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert (proc.returncode, err) == (0, ""), argv
        assert json.loads(first) if "--json" in argv else first.split()[0] in ("Cases", "Rejects")


# -- 11. ingest: a summary, not thousands of rows -------------------------------------------------
def test_a_big_ingest_prints_a_summary_by_outcome_and_reason_not_a_row_per_frame(tmp_path):
    feed = big_feed(tmp_path / "big.txt", 6_000)
    with feed.open("a") as fh:
        fh.write("bad-1 H1|1|Kakuma1|MED|3\n")
    proc = ussd("--home", "home", "ingest", str(feed), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Verdicts" not in proc.stdout and "more" not in proc.stdout
    assert "6,001 frames" in proc.stdout
    assert "applied" in proc.stdout and "new case" in proc.stdout and "6,000" in proc.stdout
    assert "not in the frame's form" in proc.stdout


def test_ingest_summary_mode_on_a_small_file(tmp_path):
    feed = tmp_path / "f.txt"
    feed.write_text("k-1 " + frame(1, "A", "MED", 1, 1) + "\nk-1 " + frame(1, "A", "MED", 1, 1) + "\n")
    proc = ussd("--home", "home", "ingest", "--summary", str(feed), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Verdicts" not in proc.stdout
    assert "2 frames" in proc.stdout and "sent again" in proc.stdout
    assert "1 conflicts" not in proc.stdout and "0 conflicts open" in proc.stdout


# -- 10. tables at 80 columns never split a code or an id ------------------------------------------
from console.demo.gateway_sim import SAMPLES  # noqa: E402


def sample_home(tmp_path):
    files = sorted(str(p) for p in SAMPLES.iterdir())
    proc = ussd("--home", "home", "ingest", *files, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_tables_at_80_columns_keep_codes_and_ids_whole(tmp_path):
    outputs = [sample_home(tmp_path).stdout]
    for argv in (["status"], ["cases"], ["ranking"], ["quarantine"], ["quarantine", "--all"], ["rejects"],
                 ["evictions"], ["operator", "list"], ["retention", "show"]):
        proc = ussd("--home", "home", *argv, cwd=tmp_path)
        assert proc.returncode == 0, (argv, proc.stderr)
        outputs.append(proc.stdout)
    text = "\n".join(outputs)
    for line in text.splitlines():
        assert len(line) <= 80, line
    lines = text.splitlines()
    for whole in ("kak01-1", "dad01-1", "ifo02-2", "H1|1|Kakuma1|MED|3|86|#89", "H1|1|Kakuma1|MED|9|86|#95",
                  "00-dropped-session.txt", "07-legacy-export.csv", "05-bad-lines.txt:3", "conflicts open",
                  "frame ids kept", "bad checksum", "key fingerprint"):
        assert any(whole in line for line in lines), whole  # on one line, never split over two
    for code in ("CONFLICT_QUARANTINED", "REJECT_BAD_FORMAT", "same_frame_id_different_payload"):
        assert code not in text  # plain words on the screen; the codes are in --json


def test_the_audit_log_at_80_columns_keeps_actions_and_targets_whole(tmp_path):
    secret = tmp_path / "pass"
    secret.write_text("a long enough passphrase\n")
    secret.chmod(0o600)
    for argv in (["operator", "add", "alice"],
                 ["retention", "set", "10", "--operator", "alice",
                  "--reason", "disk nearly full until Friday, so a shorter retention for a while"]):
        proc = ussd("--home", "home", *argv, "--passphrase-file", str(secret), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    proc = ussd("--home", "home", "audit", "show", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), proc.stdout
    for whole in ("retention.set", "operator.add", "operator:alice", "alice"):
        assert any(whole in line for line in lines), whole


# -- 16 and "Explain a reject": rejects say what was wrong --------------------------------------------
def test_rejects_show_the_line_its_file_and_line_and_what_was_wrong(tmp_path):
    sample_home(tmp_path)
    proc = ussd("--home", "home", "rejects", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "05-bad-lines.txt:3" in proc.stdout and "H1|1|Kakuma1|MED|3 " in proc.stdout
    assert "expected 7 fields, got 5" in proc.stdout
    assert "05-bad-lines.txt:2" in proc.stdout and "checksum says #cb, frame says #00" in proc.stdout
    rows = [json.loads(line) for line in ussd("--home", "home", "rejects", "--json", cwd=tmp_path).stdout.splitlines()]
    assert {r["reason"] for r in rows} == {"bad_grammar", "bad_trailer"}  # the codes stay in --json


# -- 12. cases by need name and by date --------------------------------------------------------------
def test_cases_filter_finds_need_names_and_dates(tmp_path):
    sample_home(tmp_path)
    water = ussd("--home", "home", "cases", "--filter", "water", "--json", cwd=tmp_path)
    rows = [json.loads(line) for line in water.stdout.splitlines()]
    assert rows and {r["need"] for r in rows} == {"WAT"}
    today = __import__("datetime").date.today()
    tomorrow = today + __import__("datetime").timedelta(days=1)
    assert len(ussd("--home", "home", "cases", "--until", str(today), "--json", cwd=tmp_path).stdout.splitlines()) == 10
    assert ussd("--home", "home", "cases", "--since", str(tomorrow), "--json", cwd=tmp_path).stdout == ""
    bad = ussd("--home", "home", "cases", "--since", "last week", cwd=tmp_path)  # argparse's usage, then the why
    assert bad.returncode == 2 and "not a date like 2025-05-08" in bad.stderr.splitlines()[-1]


# -- 13. operator list ------------------------------------------------------------------------------
def test_operator_list_says_active_or_retired_under_a_status_column(tmp_path):
    sample_home(tmp_path)
    pf = tmp_path / "pf"
    pf.write_text("long enough passphrase\n")
    pf.chmod(0o600)
    approved = ("--operator", "alice", "--operator-passphrase-file", str(pf), "--role", "admin")
    for name, more in (("alice", ()), ("bob", approved)):
        proc = ussd("--home", "home", "operator", "add", name, "--passphrase-file", str(pf), *more, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    proc = ussd("--home", "home", "operator", "retire", "bob", "--operator", "alice", "--reason", "left the team",
                "--passphrase-file", str(pf), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = ussd("--home", "home", "operator", "list", cwd=tmp_path).stdout
    assert "status" in out and "retired" not in out.splitlines()[2]  # the header says status, not "retired"
    alice = next(line for line in out.splitlines() if "alice" in line)
    bob = next(line for line in out.splitlines() if "bob" in line)
    assert "active" in alice and "retired 20" in bob


# -- 14. --version, help, examples; no --json where it means nothing ----------------------------------
def test_version_help_texts_and_examples(tmp_path):
    version = ussd("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("ussd-console ")
    top = ussd("--help", cwd=tmp_path).stdout
    assert "examples:" in top and "ussd-console demo" in top
    ingest = " ".join(ussd("ingest", "--help", cwd=tmp_path).stdout.split())  # help wraps where it likes
    assert "FILE" in ingest and "frame files:" in ingest and "--summary" in ingest and "examples:" in ingest
    cases = " ".join(ussd("cases", "--help", cwd=tmp_path).stdout.split())
    assert "show at most N rows" in cases and "skip the first N rows" in cases and "water finds WAT" in cases
    for command in ("demo", "console"):
        assert "--json" not in ussd(command, "--help", cwd=tmp_path).stdout


# -- 15. wording ------------------------------------------------------------------------------------
def test_status_says_the_default_retention_plainly(tmp_path):
    sample_home(tmp_path)
    out = ussd("--home", "home", "status", cwd=tmp_path).stdout
    assert "retention: 30 days (the default)" in out and "set by default" not in out


def test_a_bad_quarantine_id_points_at_the_table_not_at_json(tmp_path):
    sample_home(tmp_path)
    pf = tmp_path / "pf"
    pf.write_text("long enough passphrase\n")
    pf.chmod(0o600)
    ussd("--home", "home", "operator", "add", "alice", "--passphrase-file", str(pf), cwd=tmp_path)
    err = one_line_error(ussd("--home", "home", "resolve", "x", "--keep-first", "--operator", "alice",
                              "--reason", "r", "--passphrase-file", str(pf), cwd=tmp_path))
    assert "--json" not in err and "id column of `ussd-console quarantine`" in err
