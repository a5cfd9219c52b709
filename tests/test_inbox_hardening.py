"""Attacks on the inbox's reading side, each through a real ``ussd-console watch`` or ``ingest``:
a gateway's message id taken as a frame id (a re-sent frame counted twice), spreadsheets that
ask for more memory than the machine has."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from tests.helpers import ROOT, frame
from tests.inbox_helpers import drop, wait_for
from tests.test_inbox_watch_cli import Watcher

F = [frame(1, f"Site{n}", "MED", 40, 50 + n) for n in range(4)]


def cli(home, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console.cli", "--home", str(home.root), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "300"})


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


@pytest.fixture
def watcher(home, tmp_path):
    started = []

    def start(*flags):
        w = Watcher(home, tmp_path, *flags)
        started.append(w)
        return w

    yield start
    for w in started:
        if w.proc.poll() is None:
            assert w.signal(15) == 0, w.stderr()


def africas_talking(rows: list[tuple[str, str]]) -> str:
    """An Africa's Talking SMS export: the gateway's own id per message, the text as sent."""
    lines = ["id,from,to,text,date"]
    for n, (gateway_id, text) in enumerate(rows):
        lines.append(f"{gateway_id},+25471100{n:04d},40404,{text},2024-05-02 08:0{n}:13")
    return "\n".join(lines) + "\n"


# -- a gateway's message id is never a frame id ------------------------------------------------------


def test_a_bare_frame_re_sent_in_a_gateway_export_is_not_counted_twice(home, tmp_path, watcher):
    watcher("--settle-time", "0.2", "--sweep-interval", "0.5")
    # The field re-sent the same bare frame a few minutes later; the gateway gave it a new id.
    drop(home, "at-export.csv", africas_talking([("ATXid_5f1a", F[0]), ("ATXid_9c2e", F[0])]))
    ended(home, 1)
    assert query(home, "SELECT COUNT(*) FROM cases") == [(0,)]
    got = query(home, "SELECT line, reason, frame_id, frame_text FROM rejects ORDER BY line")
    assert got == [(2, "no_frame_id", "", F[0]), (3, "no_frame_id", "", F[0])]
    shown = cli(home, "rejects")
    assert shown.returncode == 0, shown.stderr
    assert "a gateway's message id changes with every re-send" in " ".join(shown.stdout.split())
    # The same export with the sender's own frame id in the text: one case of 40, the re-send a duplicate.
    drop(home, "at-export-2.csv", africas_talking([("ATXid_0001", f"s1-1 {F[1]}"), ("ATXid_0002", f"s1-1 {F[1]}")]))
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
