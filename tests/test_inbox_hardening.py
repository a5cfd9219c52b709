"""Attacks on the inbox's reading side, each through the inbox service ``ussd-console watch`` runs
(in the test's process), a real ``watch`` (whose memory is measured) or ``ingest``: a gateway's
message id taken as a frame id (a re-sent frame counted twice), spreadsheets that ask for more
memory than the machine has."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.support.helpers import frame
from tests.support.clock import TestClock, tick
from tests.support.inbox_helpers import drop, started_services, wait_for
from tests.support.cli import Ran, run_cli

F = [frame(1, f"Site{n}", "MED", 40, 50 + n) for n in range(4)]


def cli(home, *args: str) -> Ran:
    return run_cli("--home", str(home.root), *args, env={"COLUMNS": "300"})


def query(home, sql: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True, timeout=60)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def ended(home, count: int) -> None:
    def done():
        if not home.db.exists():
            return False
        try:
            return query(home, "SELECT COUNT(*) FROM inbox_files WHERE state != 'claimed'")[0][0] >= count
        except sqlite3.OperationalError:
            return False
    wait_for(done, what=f"{count} files to end")


def africas_talking(rows: list[tuple[str, str]]) -> str:
    """An Africa's Talking SMS export: the gateway's own id per message, the text as sent."""
    lines = ["id,from,to,text,date"]
    for n, (gateway_id, text) in enumerate(rows):
        lines.append(f"{gateway_id},+25471100{n:04d},40404,{text},2024-05-02 08:0{n}:13")
    return "\n".join(lines) + "\n"


# -- a gateway's message id is never a frame id ------------------------------------------------------


def test_a_bare_frame_re_sent_in_a_gateway_export_is_not_counted_twice(home):
    with started_services(home, settle_time=0.2, sweep_interval=0.5, observer=False) as start:
        clock = TestClock()
        bare_frame_re_sent(home, start(clock=clock), clock)


def bare_frame_re_sent(home, service, clock) -> None:
    """The sweep alone takes the files in: each is swept once it has settled (a tick past its settle time)."""
    # The field re-sent the same bare frame a few minutes later; the gateway gave it a new id.
    drop(home, "at-export.csv", africas_talking([("ATXid_5f1a", F[0]), ("ATXid_9c2e", F[0])]))
    tick(service, clock, 1.0)
    service.sweep_now()
    ended(home, 1)
    assert query(home, "SELECT COUNT(*) FROM cases") == [(0,)]
    got = query(home, "SELECT line, reason, frame_id, frame_text FROM rejects ORDER BY line")
    assert got == [(2, "no_frame_id", "", F[0]), (3, "no_frame_id", "", F[0])]
    shown = cli(home, "rejects")
    assert shown.returncode == 0, shown.stderr
    assert "a gateway's message id changes with every re-send" in " ".join(shown.stdout.split())
    # The same export with the sender's own frame id in the text: one case of 40, the re-send a duplicate.
    drop(home, "at-export-2.csv", africas_talking([("ATXid_0001", f"s1-1 {F[1]}"), ("ATXid_0002", f"s1-1 {F[1]}")]))
    tick(service, clock, 1.0)
    service.sweep_now()
    ended(home, 2)
    assert query(home, "SELECT COUNT(*), SUM(headcount) FROM cases") == [(1, 40)]


def test_a_site_names_its_frame_id_column_in_config(home, tmp_path):
    home.config.write_text('[inbox]\nid_columns = ["ref"]\nphone_columns = ["who"]\n')
    export = tmp_path / "export.csv"
    export.write_text(f"id,ref,who,text\nATX1,r1-1,+254711000001,{F[2]}\nATX2,r1-1,+254711000001,{F[2]}\n")
    done = cli(home, "ingest", "--json", str(export))
    assert done.returncode == 0, done.stderr
    outcomes = [json.loads(line)["outcome"] for line in done.stdout.splitlines()]
    assert outcomes == ["APPLIED", "DUPLICATE"]
    assert query(home, "SELECT frame_id FROM cases") == [("r1-1",)]


@pytest.mark.parametrize("table, words", [
    ('id_columns = "ref"', "id_columns must be a list of column names"),
    ('id_columns = ["ref"]\ntext_columns = ["Ref"]', "text_columns: 'Ref' is already in id_columns"),
    ('phone_columns = [""]', "phone_columns: '' is not a column name"),
])
def test_a_bad_column_setting_stops_watch_at_start_naming_the_key(home, table, words):
    home.config.write_text(f"[inbox]\n{table}\n")
    done = cli(home, "watch")
    assert done.returncode != 0
    assert words in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


# -- a spreadsheet never takes more memory than it may, nor the receiver down with it ------------------


def xlsx_one_far_cell() -> bytes:
    """The 5 KB attack: a header, and one cell at XFD1048576 (the sheet declares A1:XFD1048576)."""
    import io

    import xlsxwriter

    out = io.BytesIO()
    book = xlsxwriter.Workbook(out, {"in_memory": True})
    sheet = book.add_worksheet("export")
    sheet.write(0, 0, "frame_id")
    sheet.write(0, 1, "text")
    sheet.write(1048575, 16383, "x")
    book.close()
    return out.getvalue()


def xlsx_with_sheet(sheet_xml: str) -> bytes:
    """An .xlsx from xlsxwriter with its first sheet's XML replaced (what no honest writer makes)."""
    import io
    import zipfile

    from tests.support.spreadsheets import xlsx_bytes

    source = zipfile.ZipFile(io.BytesIO(xlsx_bytes([["frame_id", "text"]])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in source.infolist():
            data = source.read(info)
            z.writestr(info.filename, sheet_xml.encode() if info.filename == "xl/worksheets/sheet1.xml" else data)
    return out.getvalue()


# No <dimension>, and a cell numbered far beyond its row: only the reader's memory limit stops it.
CELL_BEYOND_ITS_ROW = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
    '<row r="1"><c r="A1" t="inlineStr"><is><t>text</t></is></c>'
    '<c r="XFD1048576" t="inlineStr"><is><t>x</t></is></c></row></sheetData></worksheet>')


def ods_repeated(rows: int, cols: int) -> bytes:
    """An .ods whose second row, one cell repeated ``cols`` times, is repeated ``rows`` times."""
    import io
    import zipfile

    from tests.support.spreadsheets import _CONTENT, _MANIFEST

    body = ('<table:table-row><table:table-cell office:value-type="string"><text:p>text</text:p>'
            '</table:table-cell></table:table-row>'
            f'<table:table-row table:number-rows-repeated="{rows}"><table:table-cell '
            f'table:number-columns-repeated="{cols}" office:value-type="string"><text:p>x</text:p>'
            '</table:table-cell></table:table-row>')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet")
        z.writestr("META-INF/manifest.xml", _MANIFEST)
        z.writestr("content.xml", _CONTENT.format(rows=body), compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def file_rows(home) -> dict:
    return {name: (state, reason) for name, state, reason in
            query(home, "SELECT name, state, reason FROM inbox_files")}


def test_spreadsheets_that_ask_for_too_much_memory_are_rejected_and_the_rest_taken_in(home, tmp_path, watcher):
    far = xlsx_one_far_cell()
    assert len(far) < 8000
    w = watcher("--settle-time", "0.2", "--sweep-interval", "0.5", "--no-observer")
    drop(home, "far.xlsx", far)
    drop(home, "repeats.ods", ods_repeated(60_000, 1_000))
    drop(home, "beyond.xlsx", xlsx_with_sheet(CELL_BEYOND_ITS_ROW))
    drop(home, "good.txt", f"g1-1 {F[3]}\n")
    ended(home, 4)
    got = file_rows(home)
    assert got["good.txt"] == ("done", None)
    assert got["far.xlsx"][0] == "rejected" and "declares 1,048,576 rows by 16,384 columns" in got["far.xlsx"][1]
    assert got["repeats.ods"][0] == "rejected" and "60,001 rows by 1,000 columns" in got["repeats.ods"][1]
    assert got["beyond.xlsx"][0] == "rejected" and "the spreadsheet reader stopped on" in got["beyond.xlsx"][1]
    for name in ("far", "repeats", "beyond"):
        # The .reason file is written just after the row says rejected.
        reason = wait_for(lambda: next(home.rejected.glob(f"{name}.*.reason"), None), what=f"{name}'s reason")
        assert got[f"{name}.{'ods' if name == 'repeats' else 'xlsx'}"][1] in reason.read_text()
    assert query(home, "SELECT frame_id FROM cases") == [("g1-1",)]
    assert w.proc.poll() is None, w.stderr()  # the receiver lives on, and goes on taking files in
    status = (Path("/proc") / str(w.proc.pid) / "status").read_text()
    peak_kb = int(status.split("VmHWM:")[1].split()[0])
    assert peak_kb < 300 * 1024, status  # the sheets were sized up without being allocated
    drop(home, "later.txt", f"g2-1 {F[2]}\n")
    ended(home, 5)
    assert len(query(home, "SELECT frame_id FROM cases")) == 2
    assert "Traceback" not in w.stderr()


def test_ingest_of_a_spreadsheet_bomb_is_one_line_and_applies_nothing(home, tmp_path):
    bomb = tmp_path / "far.xlsx"
    bomb.write_bytes(xlsx_one_far_cell())
    good = tmp_path / "good.txt"
    good.write_text(f"g1-1 {F[3]}\n")
    done = cli(home, "ingest", str(good), str(bomb))
    assert done.returncode == 2, done.stdout
    assert "far.xlsx: the sheet declares 1,048,576 rows" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not home.db.exists() or query(home, "SELECT COUNT(*) FROM cases") == [(0,)]


def test_a_sheet_within_the_limits_is_read_in_the_child_with_its_dates(home, tmp_path):
    import datetime as dt

    from core.inbox.spreadsheets import sheet_rows
    from tests.support.spreadsheets import ods_bytes, xlsx_bytes

    rows = [["frame_id", "text", "n"], ["s1-1", F[0], 7]]
    got = sheet_rows(xlsx_bytes(rows), 1 << 20)
    assert got[:2] == [["frame_id", "text", "n"], ["s1-1", F[0], 7.0]]
    assert sheet_rows(ods_bytes(rows), 1 << 20)[:2] == got[:2]
    import io

    import xlsxwriter

    out = io.BytesIO()
    book = xlsxwriter.Workbook(out, {"in_memory": True})
    sheet = book.add_worksheet()
    sheet.write_datetime(0, 0, dt.datetime(2024, 5, 2, 8, 1, 13), book.add_format({"num_format": "yyyy-mm-dd hh:mm"}))
    book.close()
    assert sheet_rows(out.getvalue(), 1 << 20) == [[dt.datetime(2024, 5, 2, 8, 1, 13)]]
