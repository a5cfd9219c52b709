"""Carrying a case to done through the command line alone, each command a real process:
ingest a session, mark a case dispatched then served (signed), the ranking and its CSV,
a disputed case, a case's versions, counts by status, verify before and after a mark
is edited by SQL, and a conflict shown against the ledger after a correction on its case."""

from __future__ import annotations

import csv
import json
import sqlite3

import pytest

from console.demo.gateway_sim import SAMPLES
from tests.support.helpers import frame
from tests.support.signing import PASS
from tests.support.cli import Ran, run_cli


def run(home, *argv: str, ok: bool = True) -> Ran:
    proc = run_cli("--home", str(home), *argv)
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def lines(proc) -> list[dict]:
    return [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]


@pytest.fixture
def session_home(tmp_path):
    home = tmp_path / "home"
    run(home, "ingest", str(SAMPLES / "01-session.txt"), str(SAMPLES / "04-conflict.txt"))
    passfile = tmp_path / "alice.pass"
    passfile.write_text(PASS + "\n", encoding="utf-8")
    passfile.chmod(0o600)
    run(home, "operator", "add", "alice", "--passphrase-file", str(passfile))
    return home, str(passfile)


def sign(home, passfile, *argv, ok=True):
    return run(home, *argv, "--operator", "alice", "--reason", "checked with the site", "--passphrase-file",
               passfile, ok=ok)


def test_a_case_carried_to_done_through_the_command_line(session_home, tmp_path):
    home, passfile = session_home
    ranked = {r["frame_id"]: r for r in lines(run(home, "--json", "ranking"))}
    assert set(ranked) == {"kak01-1", "kak02-2", "kak03-3"}
    assert ranked["kak01-1"]["disputed"] is True  # a 9-person correction waits in quarantine
    assert ranked["kak02-2"]["disputed"] is False and ranked["kak02-2"]["status"] == "open"

    shown = sign(home, passfile, "case", "mark", "kak02-2", "dispatched")
    assert "About to sign:" in shown.stdout and "mark case kak02-2" in shown.stdout
    sign(home, passfile, "case", "mark", "kak02-2", "served")
    assert "kak02-2" not in {r["frame_id"] for r in lines(run(home, "--json", "ranking"))}
    every = {r["frame_id"]: r for r in lines(run(home, "--json", "ranking", "--all"))}
    assert every["kak02-2"]["status"] == "served"

    status = json.loads(run(home, "--json", "status").stdout)
    assert status["cases_by_status"] == {"open": 2, "dispatched": 0, "served": 1, "closed": 0}

    target = tmp_path / "dispatch.csv"
    run(home, "ranking", "--csv", str(target))
    rows = {r["frame_id"]: r for r in csv.DictReader(target.open(encoding="utf-8"))}
    assert set(rows) == {"kak01-1", "kak03-3"}
    assert rows["kak01-1"]["disputed"] == "true" and rows["kak03-3"]["disputed"] == "false"
    assert rows["kak01-1"]["status"] == "open"

    # A served case cannot be sent a team again, and an unknown id is refused: one line, exit 2.
    for argv, words in ((("kak02-2", "dispatched"), "cannot be marked dispatched"),
                        (("nope-1", "served"), "no case with frame id nope-1")):
        refused = sign(home, passfile, "case", "mark", *argv, ok=False)
        assert refused.returncode == 2 and words in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert json.loads(run(home, "--json", "status").stdout)["cases_by_status"]["served"] == 1

    assert run(home, "audit", "verify").returncode == 0
    con = sqlite3.connect(home / "receiver.db")
    con.execute("UPDATE case_marks SET to_status = 'closed' WHERE to_status = 'served'")
    con.commit()
    con.close()
    bad = run(home, "audit", "verify", ok=False)
    assert bad.returncode == 1 and "differs from what entry #3 signed" in bad.stdout  # #1 adds alice


def test_case_show_lists_both_versions_after_an_accepted_correction(session_home):
    home, passfile = session_home
    (conflict,) = lines(run(home, "--json", "quarantine"))
    sign(home, passfile, "resolve", str(conflict["id"]), "--accept-correction")
    story = json.loads(run(home, "--json", "case", "show", "kak01-1").stdout)
    assert [(v["version"], v["headcount"], v["how"]) for v in story["versions"]] == [
        (1, 3, "applied"), (2, 9, "accepted correction")]
    assert story["versions"][1]["by"] == "alice" and story["versions"][1]["reason"] == "checked with the site"
    assert story["case"]["status"] == "open" and story["open_conflicts"] == []
    people = run(home, "case", "show", "kak01-1").stdout
    assert "correction" in people and "alice" in people and "Status marks" in people
    missing = run(home, "case", "show", "zz-9", ok=False)
    assert missing.returncode == 2 and "no case with frame id zz-9" in missing.stderr


def test_a_conflict_is_shown_against_the_case_as_the_ledger_holds_it_now(tmp_path):
    """Two conflicts on one case; the first is accepted (3 people -> 9). The second is then shown
    against the 9 the ledger holds, the version keep-first would keep, not the 3 it was raised against."""
    home, passfile = tmp_path / "home", tmp_path / "alice.pass"
    first, fix = frame(1, "Kakuma1", "MED", 3, 86), frame(1, "Kakuma1", "MED", 9, 86)
    other = frame(3, "Kakuma1", "MED", 5, 86)
    (tmp_path / "a.txt").write_text(f"lk01-1 {first}\n")
    (tmp_path / "b.txt").write_text(f"lk01-1 {fix}\nlk01-3 {other}\n")
    run(home, "ingest", str(tmp_path / "a.txt"))
    run(home, "ingest", str(tmp_path / "b.txt"))
    passfile.write_text(PASS + "\n", encoding="utf-8")
    passfile.chmod(0o600)
    run(home, "operator", "add", "alice", "--passphrase-file", str(passfile))
    ids = {q["frame_id"]: q["id"] for q in lines(run(home, "--json", "quarantine"))}
    sign(home, str(passfile), "resolve", str(ids["lk01-1"]), "--accept-correction")

    (held,) = lines(run(home, "--json", "quarantine"))
    assert (held["frame_id"], held["frame_text"]) == ("lk01-3", other)
    assert (held["ledger_frame_id"], held["ledger_text"]) == ("lk01-1", fix)
    assert (held["first_frame_id"], held["first_text"]) == ("lk01-1", first)  # the record stays as it was
    shown = run(home, "quarantine").stdout
    assert f"ledger: {fix}" in shown and f"new:    {other}" in shown and first not in shown
    kept = sign(home, str(passfile), "resolve", str(held["id"]), "--keep-first")
    assert f"ledger now   lk01-1 {fix}" in kept.stdout  # what the preview says is what was shown
    assert [c["headcount"] for c in lines(run(home, "--json", "cases"))] == [9]
