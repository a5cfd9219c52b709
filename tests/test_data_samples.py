"""The sample gateway files in data/samples/, which the guides tell a reader to take in, do what
the guides say: every file is read, every new frame is one case, the one re-sent frame is a duplicate,
the update's two lines are held as conflicts, and a copy dropped into the inbox is archived without its phone column."""

from __future__ import annotations

import json
from collections import Counter

from tests.support.helpers import ROOT
from tests.support.cli import run_cli

SAMPLES = ROOT / "data" / "samples"


def cli(home, *args):
    return run_cli("--home", str(home), *args)


def test_every_sample_the_guides_name_is_there_and_listed_in_the_data_readme():
    listed = (ROOT / "data" / "README.md").read_text()
    names = sorted(p.name for p in SAMPLES.iterdir())
    assert names == ["africastalking.jsonl", "frontlinesms.xlsx", "rapidpro.csv", "session.txt", "update.txt"]
    assert all(f"`{name}`" in listed for name in names)


def test_the_samples_taken_in_by_hand_give_eight_cases_one_duplicate_and_two_conflicts(tmp_path):
    done = cli(tmp_path / "home", "ingest", "--json", *sorted(str(p) for p in SAMPLES.iterdir()))
    assert done.returncode == 0, done.stderr
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert Counter(v["outcome"] for v in verdicts) == {"APPLIED": 8, "DUPLICATE": 1, "CONFLICT_QUARANTINED": 2}
    assert {v["file"].rsplit("/", 1)[-1] for v in verdicts} == {p.name for p in SAMPLES.iterdir()}
    assert [v["frame_id"] for v in verdicts if v["outcome"] == "DUPLICATE"] == ["lod01-1"]
    # update.txt, taken in last (as the shell's * sorts it), holds a conflict and a correction.
    held = [(v["frame_id"], v["reason"]) for v in verdicts if v["outcome"] == "CONFLICT_QUARANTINED"]
    assert held == [("lod01-1", "same_frame_id_different_payload"), ("lod02-4", "same_case_different_payload")]
    assert all(v["file"].endswith("update.txt") for v in verdicts if v["outcome"] == "CONFLICT_QUARANTINED")


def test_a_sample_dropped_into_the_inbox_is_archived_without_its_phone_column(tmp_path):
    home = tmp_path / "home"
    (home / "inbox").mkdir(parents=True)
    dropped = home / "inbox" / "rapidpro.csv"
    dropped.write_bytes((SAMPLES / "rapidpro.csv").read_bytes())
    done = cli(home, "ingest", str(dropped))
    assert done.returncode == 0, done.stderr
    [archived] = (home / "processed").rglob("rapidpro*.csv")
    text = archived.read_text()
    assert "lod04-1" in text and "URN" not in text and "+999" not in text
