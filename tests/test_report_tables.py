"""``report --format csv|xlsx --hxl``: the report's tables as data, read back by libhxl (the HXL
project's own library) with each hashtag found and each figure the report's model's."""

from __future__ import annotations

import json
import time

import hxl
import pytest

from core import Receiver
from core.report.figures import compute
from core.report.period import parse_period
from core.report.tables import TABLE_NAMES, data_tables
from core.rules.hxl import hashtag_row
from tests.support.cli import cli
from tools.sample_store import FIXED_NOW, add_lifecycle

PERIOD = ("--since", "2024-01-01", "--until", "2024-05-02")  # the whole sample story, in UTC


def _model(home, site=None):
    """The report's model of ``PERIOD``, which ended before now (so waits are measured at its end, as
    the command measured them)."""
    with Receiver(str(home.db)) as r:
        return compute(r, parse_period(PERIOD[1], PERIOD[3], FIXED_NOW, site), str(home.root), {}, now=time.time())


def _read(target, fmt: str, index: int, name: str):
    if fmt == "csv":
        return hxl.data(str(target / f"{name}.csv"), hxl.InputOptions(allow_local=True))
    return hxl.data(str(target), hxl.InputOptions(allow_local=True, sheet_index=index))


def _same(read, written) -> bool:
    """A cell as libhxl hands it back (CSV gives text, XLSX numbers) against the model's value."""
    if written is None:
        return read in ("", None)
    if isinstance(written, bool):
        return read == ("true" if written else "false")
    if isinstance(written, (int, float)):
        return float(read) == float(written)
    return read == written


def _num(row, tag: str) -> float:
    """The number under ``tag`` (``Row.get`` without an index skips a 0, as an empty cell)."""
    return float(row.get(tag, index=0))


def _report(home, tmp_path, fmt: str, *more) -> tuple[dict, object]:
    target = tmp_path / ("tables" if fmt == "csv" else "tables.xlsx")
    done = cli(home, "report", *PERIOD, "--format", fmt, "--hxl", "--to", str(target), *more, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), target


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_libhxl_reads_every_table_with_each_hashtag_and_the_models_figures(sample_home, tmp_path, fmt):
    add_lifecycle(sample_home)
    out, target = _report(sample_home, tmp_path, fmt)
    assert out == {"file": str(target), "format": fmt, "cases": out["cases"], "people": out["people"]}
    model = _model(sample_home)
    assert (out["cases"], out["people"]) == (model.cases, model.people) and model.cases > 0
    expected = data_tables(model)
    assert [t.name for t in expected] == list(TABLE_NAMES)
    if fmt == "csv":
        assert sorted(p.name for p in target.iterdir()) == sorted(f"{n}.csv" for n in TABLE_NAMES)
    for index, table in enumerate(expected):
        source = _read(target, fmt, index, table.name)
        tags = [c.display_tag for c in source.columns]
        assert tags == hashtag_row(table.header), table.name
        assert all(t.startswith("#") for t in tags), (table.name, tags)
        rows = [row.values for row in source]
        assert len(rows) == len(table.rows), table.name
        for got, want in zip(rows, table.rows):
            for column, read, written in zip(table.header, got, want):
                if column == "made_at":  # the command's clock, not the test's
                    continue
                assert _same(read, written), (table.name, column, read, written)
    # The figures a cluster sheet sums are the report's: people by need and by site, cases by status.
    needs = list(_read(target, fmt, 1, "needs"))
    assert sum(_num(r, "#affected+ind") for r in needs) == model.people
    assert {r.get("#sector+code"): _num(r, "#meta+count") for r in needs} == \
        {c.key: c.cases for c in model.by_need}
    status = {r.get("#status"): _num(r, "#meta+count") for r in _read(target, fmt, 3, "status")}
    assert status == {c.key: c.cases for c in model.by_status} and status["served"] > 0
    sites = list(_read(target, fmt, 2, "sites"))
    assert sum(_num(r, "#meta+count") for r in sites) == model.cases
    ranking = [r.get("#meta+id") for r in _read(target, fmt, 6, "ranking")]
    assert ranking == [r["frame_id"] for r in model.ranking] and ranking
    arrivals = list(_read(target, fmt, 5, "arrivals"))
    assert sum(_num(r, "#meta+count") for r in arrivals) == model.cases
    rejects = list(_read(target, fmt, 10, "rejects_by_reason"))
    assert {r.get("#meta+reason"): _num(r, "#meta+count") for r in rejects} == \
        {c.key: c.cases for c in model.rejects_by_reason} and rejects


def test_the_summary_is_status_and_a_sites_tables_hold_that_site(sample_home, tmp_path):
    status = json.loads(cli(sample_home, "status", "--json").stdout)
    out, target = _report(sample_home, tmp_path, "csv")
    assert (out["cases"], out["people"]) == (status["cases"], status["headcount_total"])
    summary = list(hxl.data(str(target / "summary.csv"), hxl.InputOptions(allow_local=True)))[0]
    assert _num(summary, "#meta+count") == status["cases"]
    assert _num(summary, "#affected+ind") == status["headcount_total"]
    assert summary.get("#meta+checkpoint") == cli(sample_home, "audit", "checkpoint").stdout.splitlines()[0]
    site = _model(sample_home).by_site[0].key
    (tmp_path / "site").mkdir()
    one, one_target = _report(sample_home, tmp_path / "site", "xlsx", "--site", site)
    assert one["cases"] == _model(sample_home, site).cases < out["cases"]
    rows = list(hxl.data(str(one_target), hxl.InputOptions(allow_local=True, sheet_index=2)))
    assert [r.get("#loc+name") for r in rows] == [site]


def test_resolved_conflicts_and_who_resolved_them(tmp_path):
    from core.home import Home
    from tests.support.signing import A1, A1_FIX, B2, add_operators, ingest, quarantine_id, sign

    home = Home(tmp_path / "home").ensure()
    add_operators(home, tmp_path, "alice", "bob")
    ingest(home, tmp_path, [A1, B2])
    ingest(home, tmp_path, [A1_FIX], name="fix.txt")
    assert sign(home, tmp_path, "resolve", str(quarantine_id(home, "A-1", A1_FIX[1])), "--accept-correction") == 0
    target = tmp_path / "tables"
    assert cli(home, "report", "--format", "csv", "--hxl", "--to", str(target)).returncode == 0
    counts = {r.get("#status"): r.get("#meta+count") for r in hxl.data(str(target / "conflicts.csv"),
                                                                       hxl.InputOptions(allow_local=True))}
    assert counts == {"opened": "1", "resolved": "1", "still_open": "0"}
    resolved = list(hxl.data(str(target / "conflicts_resolved.csv"), hxl.InputOptions(allow_local=True)))
    assert [(r.get("#meta+id"), r.get("#meta+resolved_by")) for r in resolved] == [("A-1", "alice")]
    assert resolved[0].get("#date+resolved") and resolved[0].get("#status+decision")
    by = list(hxl.data(str(target / "conflicts_resolved_by.csv"), hxl.InputOptions(allow_local=True)))
    assert [(r.get("#meta+resolved_by"), r.get("#meta+count")) for r in by] == [("alice", "1")]


def test_without_hxl_the_tables_have_no_hashtag_row(sample_home, tmp_path):
    target = tmp_path / "plain"
    assert cli(sample_home, "report", *PERIOD, "--format", "csv", "--to", str(target)).returncode == 0
    text = (target / "needs.csv").read_text()
    assert text.splitlines()[0] == "need,need_name,cases,people" and "#" not in text
    with pytest.raises(hxl.HXLException):
        list(hxl.data(str(target / "needs.csv"), hxl.InputOptions(allow_local=True)))


def test_default_places_and_bad_targets(sample_home, tmp_path):
    reports = sample_home.root / "reports"
    for fmt, suffix in (("csv", ""), ("xlsx", ".xlsx")):
        done = cli(sample_home, "report", "--format", fmt, "--json")
        assert done.returncode == 0, done.stderr
        made = json.loads(done.stdout)["file"]
        assert made.startswith(str(reports / "report-")) and made.endswith(suffix) and made[-5:] != ".html"
    assert (reports / json.loads(cli(sample_home, "report", "--format", "csv", "--json").stdout)["file"]
            .rsplit("/", 1)[1] / "summary.csv").is_file()
    (tmp_path / "a-file").write_text("kept")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("kept")
    cases = ((("--format", "pdf", "--hxl"), "--format csv or --format xlsx"),
             (("--format", "csv", "--to", str(tmp_path / "a-file")), "is a file"),
             (("--format", "csv", "--to", str(tmp_path / "missing" / "t")), "does not exist"),
             (("--format", "csv", "--to", str(mine)), "already exists"),
             (("--format", "csv", "--to", str(mine), "--force"), "holds other files"),
             (("--format", "xlsx", "--to", str(tmp_path / "a-file")), "already exists"))
    for argv, words in cases:
        done = cli(sample_home, "report", *argv)
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, (argv, done.stderr)
    assert (tmp_path / "a-file").read_text() == "kept" and (mine / "notes.txt").read_text() == "kept"
    ours = tmp_path / "ours"
    assert cli(sample_home, "report", *PERIOD, "--format", "csv", "--to", str(ours)).returncode == 0
    assert cli(sample_home, "report", *PERIOD, "--format", "csv", "--hxl", "--to", str(ours), "--force").returncode == 0
    assert (ours / "needs.csv").read_text().splitlines()[1].startswith("#sector+code")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_no_phone_number_reaches_the_tables(home, tmp_path):
    from tests.support.helpers import frame

    (tmp_path / "in.txt").write_text(f"254712345678-1 {frame(1, 'Kakuma1', 'WAT', 9, 99)}\n")
    assert cli(home, "ingest", str(tmp_path / "in.txt")).returncode == 0
    for fmt, target in (("csv", tmp_path / "t"), ("xlsx", tmp_path / "t.xlsx")):
        assert cli(home, "report", "--format", fmt, "--hxl", "--to", str(target)).returncode == 0
    ranking = (tmp_path / "t" / "ranking.csv").read_text()
    assert "Kakuma1" in ranking and "[phone]" in ranking and "712345678" not in ranking
    rows = list(hxl.data(str(tmp_path / "t.xlsx"), hxl.InputOptions(allow_local=True, sheet_index=6)))
    assert rows[0].get("#loc+name") == "Kakuma1" and "712345678" not in rows[0].get("#meta+id")
