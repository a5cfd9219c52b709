"""Where a new admin stopped, guessed or misread in the first week: making a test frame by hand,
codes where words were meant, empty tables, a resolved conflict that vanished from its case, and
a gateway count nobody could read. Each through the real command line (``console.cli.main``, its
output captured, wide enough that a table keeps its phrases on one line)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import time

import pytest
from rich.console import Console

from console.cli import main
from console.dialogs.case_screen import render_story
from console.dialogs.resolve_dialog import ResolveDialog
from console.ui_text import RESOLUTION_WORDS
from core import Receiver
from core.home import Home
from core.rules.words import RESOLUTIONS
from core.signing.case_story import case_story
from core.signing.operator_add import add_operator
from tests.support.console_support import fixed_app, run_async, until
from tests.support.helpers import ROOT
from tests.support.signing import PASS, add_operators, cli, json_lines, sign
from tests.support.console_pilot import fill_and_sign, open_dialog

SAMPLES = ROOT / "data" / "samples"


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def home(tmp_path) -> Home:
    return Home(tmp_path / "home").ensure()


@pytest.fixture
def resolved(home, tmp_path, capsys):
    """The session and the update taken in; conflict #1 (lod01-1's count) kept first, #2 (lod02's
    priority) accepted as a correction, both signed by alice."""
    assert cli(home, "ingest", str(SAMPLES / "session.txt"), str(SAMPLES / "update.txt")) == 0
    add_operators(home, tmp_path, "alice")
    capsys.readouterr()
    return home


def out_of(capsys, *argv) -> str:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return " ".join(captured.out.split())  # the words, whatever the lines


# -- making a test frame ----------------------------------------------------------------------------
def test_frame_prints_the_whole_frame_with_its_trailer_and_ingest_applies_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert out_of(capsys, "frame", "H1|1|Lodwar1|WAT|15|88") == "H1|1|Lodwar1|WAT|15|88|#45"
    line = out_of(capsys, "frame", "H1|2|Lodwar1|MED|4|80", "--id", "lod02-2")
    assert line == "lod02-2 H1|2|Lodwar1|MED|4|80|#a2"  # as session.txt carries it
    made = json.loads(out_of(capsys, "frame", "H1|1|Lodwar1|WAT|15|88", "--json"))
    assert made == {"body": "H1|1|Lodwar1|WAT|15|88", "trailer": "45", "frame": "H1|1|Lodwar1|WAT|15|88|#45",
                    "frame_id": None}
    assert not (tmp_path / "data").exists()  # making a frame needs no home
    (tmp_path / "mine.txt").write_text(line + "\n")
    verdicts = json_lines(out_of(capsys, "--home", str(tmp_path / "h"), "ingest", "--json", "mine.txt"))
    assert [v["outcome"] for v in verdicts] == ["APPLIED"]


@pytest.mark.parametrize("body, words", [
    ("H1|1|Lodwar123|WAT|15|88", "site must be 1-8 letters or digits, got 'Lodwar123'"),
    ("H1|1|Lodwar1|water|15|88", "need must be 3 capital letters, got 'water'"),
    ("H1|1|Lodwar1|WAT|many|88", "people must be 1-6 digits, got 'many'"),
    ("H1|1|Lodwar1|WAT|15|1000", "priority must be 1-3 digits, got '1000'"),
    ("H2|1|Lodwar1|WAT|15|88", "version must be H1, got 'H2'"),
    ("H1|1|Lodwar1|WAT|15", "a body has 6 fields"),
    ("H1|1|Lodwar1|WAT|15|88|#45", "already ends in a checksum (#45)"),
])
def test_a_bad_body_is_one_line_that_names_the_field(body, words, capsys):
    assert main(["frame", body]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and words in captured.err and "Traceback" not in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_a_frame_id_that_disagrees_with_the_place_is_refused(capsys):
    assert main(["frame", "H1|2|Lodwar1|WAT|15|88", "--id", "lod01-1"]) == 2
    assert "frame id ends in -1, frame says place 2" in capsys.readouterr().err


def test_ingest_of_a_wrong_trailer_says_what_the_trailer_should_be(tmp_path, capsys):
    (tmp_path / "typo.txt").write_text("lod09-1 H1|1|Lodwar1|WAT|15|88|#00\n")
    out = out_of(capsys, "--home", str(tmp_path / "h"), "ingest", str(tmp_path / "typo.txt"))
    assert "checksum says #45, frame says #00" in out  # the Rejects table's words
    rejects = out_of(capsys, "--home", str(tmp_path / "h"), "rejects")
    assert "checksum says #45, frame says #00" in rejects
    # A file in the inbox, read by the inbox's own delivery, says the same.
    inbox = tmp_path / "h" / "inbox"
    inbox.mkdir()
    (inbox / "typo2.txt").write_text("lod09-2 H1|2|Lodwar1|WAT|15|88|#00\n")
    os.utime(inbox / "typo2.txt", (time.time() - 3600, time.time() - 3600))
    out = out_of(capsys, "--home", str(tmp_path / "h"), "ingest", str(inbox / "typo2.txt"))
    assert "checksum says #3f, frame says #00" in out


# -- a resolved conflict stays on its case, in words ------------------------------------------------
def test_signed_resolutions_read_as_words_and_json_keeps_the_codes(resolved, tmp_path, capsys):
    assert sign(resolved, tmp_path, "resolve", "1", "--keep-first", reason="the site says 12") == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "conflict #1: kept the first version" in out and "conflict #1: kept_first" not in out
    assert sign(resolved, tmp_path, "--json", "resolve", "2", "--accept-correction", reason="95 is right") == 0
    [result] = json_lines(capsys.readouterr().out)
    assert result["status"] == "accepted_correction"  # --json keeps the code
    listing = out_of(capsys, "--home", str(resolved.root), "quarantine", "--all")
    assert "kept first" in listing and "correction accepted" in listing and "kept_first" not in listing
    assert RESOLUTION_WORDS == {code: words.short for code, words in RESOLUTIONS.items()}  # the console's table


def test_case_show_lists_the_resolved_conflicts_with_who_kept_what_and_the_entry(resolved, tmp_path, capsys):
    assert sign(resolved, tmp_path, "resolve", "1", "--keep-first", reason="the site says 12") == 0
    assert sign(resolved, tmp_path, "resolve", "2", "--accept-correction", reason="95 is right") == 0
    capsys.readouterr()
    out = out_of(capsys, "--home", str(resolved.root), "case", "show", "lod01-1")
    assert "Open conflicts: none" in out and "Resolved conflicts" in out
    assert "kept the first version" in out and "H1|1|Lodwar1|WAT|12|88|#51" in out and "alice" in out
    assert "#2: the site says 12" in out  # the audit entry and its reason
    story = json.loads(out_of(capsys, "--home", str(resolved.root), "--json", "case", "show", "lod02-2"))
    [q] = story["resolved_conflicts"]
    assert (q["id"], q["status"], q["kept_text"], q["by"], q["audit_seq"], q["audit_reason"]) == (
        2, "accepted_correction", "H1|4|Lodwar1|MED|4|95|#86", "alice", 3, "95 is right")
    assert q["at"] is not None and story["open_conflicts"] == []
    # The console's case history shows the same.
    with Receiver(str(resolved.db)) as r:
        screen = Console(width=200, record=True)
        for part in render_story(case_story(r, frame_id="lod01-1")):
            screen.print(part)
    text = " ".join(screen.export_text().split())
    assert "Resolved conflicts" in text and "kept the first version" in text and "#2: the site says 12" in text


def test_empty_parts_of_a_case_and_of_a_new_home_say_none(resolved, tmp_path, capsys):
    out = out_of(capsys, "--home", str(resolved.root), "case", "show", "lod03-3")
    for part in ("Status marks: none", "Open conflicts: none", "Resolved conflicts: none"):
        assert part in out
    assert "┏" not in out.split("Status marks", 1)[1]  # no empty grid after the versions
    fresh = tmp_path / "fresh.txt"
    fresh.write_text("")
    assert main(["--home", str(tmp_path / "new"), "ingest", str(fresh)]) == 0
    capsys.readouterr()
    status = out_of(capsys, "--home", str(tmp_path / "new"), "status")
    assert "Inbox files: none" in status and "Frames per arrival path: none" in status
    assert "receiver: no watch or console is running" in status and "NONE" not in status
    health = json.loads(out_of(capsys, "--home", str(tmp_path / "new"), "--json", "status"))["health"]
    assert health["receiver"]["processes"] == []  # --json unchanged


def test_the_inbox_log_says_the_pass_in_words(home, capsys, caplog):
    caplog.set_level(logging.INFO)
    home.inbox.mkdir(exist_ok=True)
    assert cli(home, "ingest", str(SAMPLES / "session.txt")) == 0
    # Files that settled long ago are taken in one pass: its log line counts every frame in them.
    for name in ("rapidpro.csv", "rapidpro-again.csv"):
        shutil.copy(SAMPLES / "rapidpro.csv", home.inbox / name)
        os.utime(home.inbox / name, (time.time() - 3600, time.time() - 3600))
    assert cli(home, "ingest", str(home.inbox / "rapidpro.csv")) == 0
    assert cli(home, "ingest", str(home.inbox / "rapidpro-again.csv")) == 0
    lines = [r.getMessage() for r in caplog.records if "this pass" in r.getMessage()]
    assert lines[0].endswith("(this pass: 1 applied, 1 duplicate), moved to processed/" + lines[0].rsplit("/", 2)[1]
                             + "/rapidpro.csv"), lines
    assert "(this pass: 2 duplicates)" in lines[1], lines
    assert not any("DUPLICATE" in line or "APPLIED" in line for line in lines)


# -- gateway list ---------------------------------------------------------------------------------
def test_gateway_list_says_what_each_count_counts(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    capsys.readouterr()
    assert out_of(capsys, "--home", str(home.root), "gateway", "list").startswith("Gateways: none")
    assert sign(home, tmp_path, "gateway", "add", "office", "--kind", "africastalking", reason="short code") == 0
    capsys.readouterr()
    out = out_of(capsys, "--home", str(home.root), "gateway", "list")
    assert "accepted: posts taken in, webhook retries included" in out
    assert "webhook retries: messages among them already taken in before" in out
    [row] = json_lines(out_of(capsys, "--home", str(home.root), "--json", "gateway", "list"))
    assert {"posts", "webhook_retries", "rejects", "refused"} <= set(row)  # the codes stay


# -- the console's signed notice says the same words --------------------------------------------------
@run_async
async def test_the_consoles_signed_notice_says_the_decision_in_words(sample_home):
    with Receiver(str(sample_home.db)) as r:
        add_operator(sample_home, r, "alice", PASS)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_dialog(app, pilot, "3", "k", ResolveDialog)
        dialog = await fill_and_sign(app, pilot, "first count confirmed", PASS)
        await until(lambda: app.screen is not dialog)
        notices = [n.message for n in app._notifications]
    assert any("kept the first version" in n for n in notices), notices
    assert not any("kept_first" in n for n in notices), notices
