"""``--db`` never takes over a file that is not one of our stores, and a reading command never
creates one; every case through the real command line."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from tests.support.helpers import ROOT, frame
from tests.support.cli import Ran, run_cli

READERS = [["status"], ["cases"], ["rejects"], ["files"], ["quarantine"], ["audit", "verify"],
           ["export", "cases"]]


def cli(home, *args: str, cwd=None) -> Ran:
    return run_cli("--home", str(home.root), *args, cwd=cwd or ROOT, env={"COLUMNS": "200"})


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def other_program_db(path) -> None:
    """Another program's SQLite file: a contacts table with one row."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
    con.execute("INSERT INTO contacts VALUES ('Amina', 'x')")
    con.commit()
    con.close()


def refused(done, words: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in done.stderr, done.stderr


def frames_file(tmp_path):
    path = tmp_path / "session.txt"
    path.write_text(f"t1-1 {frame(1, 'Kakuma1', 'MED', 3, 86)}\n")
    return path


@pytest.mark.parametrize("command", READERS, ids=lambda c: " ".join(c))
def test_a_reading_command_leaves_a_missing_or_empty_file_as_it_is(home, tmp_path, command):
    missing = tmp_path / "missing.db"
    refused(cli(home, "--db", str(missing), *command), "no store at")
    assert not missing.exists()
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    refused(cli(home, "--db", str(empty), *command), "is an empty file, not a store")
    assert empty.read_bytes() == b""
    # The home's own store, never made yet: not made by a look at it either.
    refused(cli(home, *command), "no store at")
    assert not home.db.exists()


@pytest.mark.parametrize("command", READERS + [["ingest", "FILE"], ["evict"], ["retention", "show"]],
                         ids=lambda c: " ".join(c))
def test_another_programs_database_is_refused_unchanged(home, tmp_path, command):
    other = tmp_path / "other.db"
    other_program_db(other)
    before = digest(other)
    command = [str(frames_file(tmp_path)) if c == "FILE" else c for c in command]
    refused(cli(home, "--db", str(other), *command), "another program's database (tables: contacts)")
    assert digest(other) == before
    con = sqlite3.connect(f"file:{other}?mode=ro", uri=True)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["contacts"]
    con.close()


def test_a_writing_command_refuses_a_file_that_is_not_sqlite(home, tmp_path):
    session = frames_file(tmp_path)
    notes = tmp_path / "notes.db"
    notes.write_text("my notes, not a database\n")
    refused(cli(home, "--db", str(notes), "ingest", str(session)), "is not a SQLite database")
    assert notes.read_text() == "my notes, not a database\n"


def test_a_writing_command_creates_a_store_where_no_file_is_and_reopens_it(home, tmp_path):
    store = tmp_path / "new.db"
    done = cli(home, "--db", str(store), "ingest", str(frames_file(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert store.exists()
    shown = cli(home, "--db", str(store), "--json", "status")
    assert shown.returncode == 0, shown.stderr
    again = cli(home, "--db", str(store), "ingest", str(frames_file(tmp_path)))
    assert again.returncode == 0, again.stderr
