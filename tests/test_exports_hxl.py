"""``export --hxl``: the HXL hashtag row under the header, read back by libhxl (the HXL project's
own library), in CSV and in .xlsx."""

from __future__ import annotations

import json

import hxl
import pytest

from console.export_views import VIEWS
from tests.support.cli import cli

CASE_TAGS = ("#meta+id", "#loc+name", "#sector+code", "#sector+name", "#affected+ind", "#severity+num+priority",
             "#status", "#date+reported", "#date+updated")


def _read(path):
    return hxl.data(str(path), hxl.InputOptions(allow_local=True))


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_libhxl_reads_the_cases_export_and_finds_each_hashtag(sample_home, tmp_path, fmt):
    target = tmp_path / f"cases.{fmt}"
    done = cli(sample_home, "export", "cases", "--hxl", "--out", str(target), "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    source = _read(target)
    tags = [c.display_tag for c in source.columns]
    for tag in CASE_TAGS:
        assert tag in tags, (tag, tags)
    read = list(source)
    assert len(read) == rows > 0
    listed = {c["frame_id"]: c for c in json.loads("[" + ",".join(
        cli(sample_home, "cases", "--json", "--limit", "100000").stdout.splitlines()) + "]")}
    for row in read:
        case = listed[row.get("#meta+id")]
        assert row.get("#loc") == case["site"] and row.get("#sector+code") == case["need"]
        assert int(float(row.get("#affected"))) == case["headcount"] and row.get("#status") == case["status"]
        assert row.get("#date+reported")


def test_every_view_is_tagged_and_the_ranking_keeps_its_order(sample_home, tmp_path):
    for name in VIEWS:
        target = tmp_path / f"{name}.csv"
        assert cli(sample_home, "export", name, "--hxl", "--out", str(target)).returncode == 0
        header = target.read_text().splitlines()[0].split(",")
        assert len([c for c in _read(target).columns if c.tag]) == len(header), name
    ranking = list(_read(tmp_path / "ranking.csv"))
    ranked = cli(sample_home, "ranking", "--json", "--limit", "100000").stdout.splitlines()
    assert [r.get("#meta+id") for r in ranking] == [json.loads(x)["frame_id"] for x in ranked]


def test_without_hxl_there_is_no_hashtag_row(sample_home, tmp_path):
    target = tmp_path / "cases.csv"
    assert cli(sample_home, "export", "cases", "--out", str(target)).returncode == 0
    assert "#meta+id" not in target.read_text()
    with pytest.raises(hxl.HXLException):
        list(_read(target))


def test_hxl_on_stdout_is_the_same_rows(sample_home):
    out = cli(sample_home, "export", "cases", "--hxl", "--out", "-").stdout.splitlines()
    assert out[1].startswith("#meta+id,#loc+name,#sector+code")
