"""The situation report (``report``): its figures are the store's, as ``status --json`` and
``cases --json`` give them; the HTML fetches nothing; the PDF prints on A4; the last line is the
audit log's checkpoint."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time

import pytest

from core import Receiver
from core.report.period import parse_period
from tests.support.cli import cli
from tools.sample_store import FIXED_NOW, add_lifecycle

PERIOD = ("--since", "2024-01-01", "--until", "2024-05-02")  # the whole sample story, in UTC


def _json(home, *argv) -> dict | list:
    done = cli(home, *argv, "--json")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    return json.loads(done.stdout) if len(lines) == 1 and argv[0] != "cases" else [json.loads(x) for x in lines]


def test_report_figures_equal_status_and_cases_for_the_same_period(sample_home, tmp_path):
    add_lifecycle(sample_home)
    status = _json(sample_home, "status")
    everything = _json(sample_home, "report", *PERIOD, "--to", str(tmp_path / "all.html"))
    assert set(everything) == {"file", "format", "cases", "people"}
    assert everything["format"] == "html" and everything["file"] == str(tmp_path / "all.html")
    assert (everything["cases"], everything["people"]) == (status["cases"], status["headcount_total"])
    assert everything["cases"] > 0

    # A day inside the story: the cases the ledger lists for it, one by one.
    day = ("--since", "2024-05-02", "--until", "2024-05-02")
    listed = _json(sample_home, "cases", *day, "--limit", "100000")
    one_day = _json(sample_home, "report", *day, "--format", "pdf", "--to", str(tmp_path / "day.pdf"))
    assert one_day["cases"] == len(listed) and one_day["people"] == sum(c["headcount"] for c in listed)
    assert 0 < one_day["cases"] < everything["cases"]  # the 40-day-old Ifo session is outside it

    from core.report.figures import compute

    with Receiver(str(sample_home.db)) as r:
        period = parse_period(PERIOD[1], PERIOD[3], FIXED_NOW)
        f = compute(r, period, str(sample_home.root), {}, now=FIXED_NOW)
        site = listed[0]["site"]
        f_site = compute(r, parse_period(day[1], day[3], FIXED_NOW, site), str(sample_home.root), {}, now=FIXED_NOW)
    assert {c.key: c.cases for c in f.by_status} == status["cases_by_status"]
    assert sum(c.people for c in f.by_need) == status["headcount_total"]
    assert sum(c.cases for c in f.by_site) == status["cases"]
    assert f.conflicts["still_open"] == status["conflicts_open"]
    assert sum(c.cases for c in f.rejects_by_reason) == status["rejects"]
    assert sum(n for _, n in f.arrivals) == status["cases"]
    assert f_site.cases == sum(1 for c in listed if c["site"] == site)
    ranked = _json(sample_home, "ranking", "--limit", "10")
    assert [r["frame_id"] for r in f.ranking] == [r["frame_id"] for r in ranked]


def test_html_is_self_contained_and_ends_with_the_checkpoint(sample_home, tmp_path):
    target = tmp_path / "r.html"
    assert cli(sample_home, "report", *PERIOD, "--to", str(target)).returncode == 0
    page = target.read_text()
    assert page.count("<svg") == 3  # arrivals, people by need, cases by status
    for fetching in ("<script", "<link", "<img", "<iframe", "src=", "@import"):
        assert fetching not in page, fetching
    for ref in re.findall(r'href="([^"]*)"', page) + re.findall(r"url\(([^)]*)\)", page):
        assert ref.startswith("#"), ref  # only the SVGs' own references to their parts (hatches, clips)
    addresses = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert addresses <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink",
                         "http://creativecommons.org/ns#", "http://purl.org/dc/elements/1.1/",
                         "http://www.w3.org/1999/02/22-rdf-syntax-ns#", "http://purl.org/dc/dcmitype/StillImage"}, \
        addresses
    line = cli(sample_home, "audit", "checkpoint").stdout.splitlines()[0]
    text = re.sub(r"<[^>]+>", "\n", page).strip().splitlines()
    assert text[-1].endswith(line) and "checkpoint" in text[-1]
    for word in ("People by need", "Cases by status now", "Rejects by reason", "Conflicts", "Health now"):
        assert word in page, word


def test_pdf_is_a4_and_its_pages_render(sample_home, tmp_path):
    target = tmp_path / "r.pdf"
    assert cli(sample_home, "report", *PERIOD, "--to", str(target)).returncode == 0
    data = target.read_bytes()
    assert data.startswith(b"%PDF-")
    boxes = re.findall(rb"/MediaBox \[ *0 0 ([\d.]+) ([\d.]+) *\]", data)
    assert boxes and all((round(float(w)), round(float(h))) == (595, 842) for w, h in boxes), boxes  # A4 in points
    if shutil.which("pdftoppm") is None:
        pytest.skip("pdftoppm (Debian's poppler-utils) is not installed: scripts/ensure-poppler installs it")
    done = subprocess.run(["pdftoppm", "-r", "40", "-png", str(target), str(tmp_path / "page")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pages = sorted(tmp_path.glob("page-*.png"))
    assert len(pages) == len(boxes) and pages[0].stat().st_size > 1000


def _empty_store(home) -> None:
    Receiver(str(home.db)).close()


def test_bad_periods_and_targets_are_one_line_errors(home, tmp_path):
    _empty_store(home)
    for argv, words in ((("--since", "3x"), "is not a period"),
                        (("--since", "2026-12-05", "--until", "2026-12-01"), "at or after it ends"),
                        (("--to", str(tmp_path / "missing" / "r.html")), "does not exist"),
                        (("--to", str(tmp_path)), "is a folder")):
        done = cli(home, "report", *argv)
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, done.stderr
    (tmp_path / "taken.html").write_text("kept")
    assert cli(home, "report", "--to", str(tmp_path / "taken.html")).returncode == 2
    assert (tmp_path / "taken.html").read_text() == "kept"
    assert cli(home, "report", "--to", str(tmp_path / "taken.html"), "--force").returncode == 0
    assert not list(tmp_path.glob(".*.tmp"))


def test_default_file_is_in_the_homes_reports_folder(home):
    _empty_store(home)
    done = cli(home, "report", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["file"].startswith(str(home.root / "reports" / "report-")) and out["file"].endswith(".html")
    assert (out["cases"], out["people"]) == (0, 0)


def test_figures_are_the_same_on_both_backends(receiver, tmp_path):
    """The grouped scans (hours, waits) on SQLite and on PostgreSQL alike."""
    from core.report.figures import compute
    from tests.support.helpers import frame

    now = 1_800_000_000.0
    items = [(f"b{i}-1", frame(1, f"S{i % 3}", ("WAT", "FOO")[i % 2], 1 + i % 5, i % 90)) for i in range(60)]
    receiver.ingest_many(items[:40], now=now - 5 * 3600, source="cli")
    receiver.ingest_many(items[40:], now=now - 600, source="cli")
    f = compute(receiver, parse_period("24h", None, now), "home", {}, now=now)
    t = receiver.totals()
    assert (f.cases, f.people) == (t["cases"], t["headcount_total"]) == (60, sum(1 + i % 5 for i in range(60)))
    assert [n for _, n in f.arrivals if n] == [40, 20] and len(f.arrivals) == 24
    assert {c.label: c.cases for c in f.waiting if c.cases} == {"1-6 hours": 40, "under 1 hour": 20}
    assert round(f.oldest_waiting) == 5 * 3600
    assert {c.key: c.cases for c in f.by_need} == {"WAT": 30, "FOO": 30}
    assert compute(receiver, parse_period("24h", None, now, "S1"), "home", {}, now=now).cases == 20


def test_no_phone_number_reaches_the_report(home, tmp_path):
    from tests.support.helpers import frame

    phone_id = "254712345678-1"
    (tmp_path / "in.txt").write_text(f"{phone_id} {frame(1, 'Kakuma1', 'WAT', 9, 99)}\n")
    assert cli(home, "ingest", str(tmp_path / "in.txt")).returncode == 0
    assert phone_id in cli(home, "ranking").stdout  # stored as the gateway sent it
    for fmt in ("html", "pdf"):
        assert cli(home, "report", "--to", str(tmp_path / f"r.{fmt}")).returncode == 0
    page = (tmp_path / "r.html").read_text()
    assert "712345678" not in page and "[phone]" in page and "Kakuma1" in page
    if shutil.which("pdftotext") is None:  # the PDF's text is compressed: read it as a reader would
        pytest.skip("pdftotext (Debian's poppler-utils) is not installed: scripts/ensure-poppler installs it")
    text = subprocess.run(["pdftotext", str(tmp_path / "r.pdf"), "-"], capture_output=True, text=True,
                          timeout=120).stdout
    assert "Kakuma1" in text and "[phone]" in text and "712345678" not in text.replace(" ", "")


def test_resolved_conflicts_say_by_whom_and_the_checkpoint_covers_the_signature(tmp_path):
    from core.home import Home
    from core.report.figures import compute
    from tests.support.signing import A1, A1_FIX, B2, add_operators, ingest, quarantine_id, sign

    home = Home(tmp_path / "home").ensure()
    add_operators(home, tmp_path, "alice", "bob")
    ingest(home, tmp_path, [A1, B2])
    ingest(home, tmp_path, [A1_FIX], name="fix.txt")
    assert sign(home, tmp_path, "resolve", str(quarantine_id(home, "A-1", A1_FIX[1])), "--accept-correction") == 0
    target = tmp_path / "r.html"
    assert cli(home, "report", "--to", str(target)).returncode == 0
    with Receiver(str(home.db)) as r:
        f = compute(r, parse_period("24h", None, time.time()), str(home.root), {})
    c = f.conflicts
    assert (c["opened"], c["resolved"], c["still_open"]) == (1, 1, 0)
    assert c["resolved_by"] == {"alice": 1} and c["resolved_rows"][0]["frame_id"] == "A-1"
    page = target.read_text()
    assert "alice" in page and "op:alice=" in page and "op:bob=" in page  # the checkpoint names both keys
    assert cli(home, "audit", "checkpoint").stdout.splitlines()[0] in page
