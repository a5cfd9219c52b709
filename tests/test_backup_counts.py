"""Which verified backups count for a home, through the real command line: only this home's (its
id, and an audit chain that is a prefix of the live one), wherever they were written, and as made
no later than they were verified, so a date in the future never hides a later failure."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from textual.widgets import Static

from core import Receiver
from core.backup import archive, schedule
from core.home import Home
from tests.support.backup_support import backup_key, resign
from tests.support.console_support import fixed_app, press_and_settle, run_async
from tests.support.signing import A1, B2, add_operators, ingest, sign
from tests.support.backups import repack as _repack, run
from tests.support.console_pilot import static_text
from tests.support.watch import Watcher
from tests.support.waiting import wait_for

YEAR_2100 = 4102444800.0


def new_home(root: Path, tmp_path: Path) -> Home:
    h = Home(root).ensure()
    add_operators(h, tmp_path, "alice")
    ingest(h, tmp_path, [A1, B2], name=f"{root.name}.txt")
    return h


@pytest.fixture
def home(tmp_path) -> Home:
    return new_home(tmp_path / "home", tmp_path)


def make(home: Home, *flags: str) -> Path:
    proc = run("--home", str(home.root), "--json", "backup", *flags)
    assert proc.returncode == 0, proc.stderr
    return Path(json.loads(proc.stdout)["file"])


def backup_status(home: Home) -> dict:
    proc = run("--home", str(home.root), "--json", "status")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["backup"]


def overdue_since_long_ago(home: Home) -> None:
    home.config.write_text("[backup]\nevery = 60\n")
    schedule.state_path(home).write_text(json.dumps({"scheduled_since": time.time() - 3600}))


def test_another_homes_backup_in_this_homes_folder_does_not_clear_overdue(home, tmp_path):
    other = new_home(tmp_path / "other", tmp_path)
    overdue_since_long_ago(home)
    assert backup_status(home)["overdue"]
    theirs = make(other, "--to", str(home.root / "backups"))  # copied into this home's backup folder
    proc = run("--home", str(home.root), "backup", "verify", str(theirs))
    assert proc.returncode == 1 and "not made by this home" in proc.stderr, proc.stderr
    # Even told to accept the other home's key, the file is not this home's backup.
    proc = run("--home", str(home.root), "backup", "verify", str(theirs), "--backup-key", backup_key(other))
    assert proc.returncode == 0, proc.stderr
    assert "does not count" in proc.stderr and "another home" in proc.stderr
    got = backup_status(home)
    assert got["overdue"] and got["last_verified"] is None
    mine = make(home)
    assert run("--home", str(home.root), "backup", "verify", str(mine)).returncode == 0
    got = backup_status(home)
    assert not got["overdue"] and Path(got["last_verified"]["file"]) == mine


def test_a_backup_of_a_copy_that_went_its_own_way_does_not_count(home, tmp_path):
    """The same home id, but the audit chain is not a prefix of this home's: a restored copy that
    signed other entries since."""
    assert sign(home, tmp_path, "backup", "key", "record", reason="this machine") == 0
    copy = Home(tmp_path / "copy")
    proc = run("restore", str(make(home, "--to", str(tmp_path / "usb"))), "--home", str(copy.root),
               "--backup-key", backup_key(home))
    assert proc.returncode == 0, proc.stderr
    assert sign(copy, tmp_path, "retention", "set", "40") == 0
    assert sign(home, tmp_path, "retention", "set", "50") == 0
    later = make(home, "--to", str(tmp_path / "usb"))
    proc = run("--home", str(copy.root), "backup", "verify", str(later))
    assert proc.returncode == 0, proc.stderr  # the home's key, which the copy's log recorded: genuine
    assert "does not count" in proc.stderr and "not a prefix" in proc.stderr
    assert backup_status(copy)["last_verified"] is None


def test_a_backup_dated_2100_counts_as_verified_now_and_hides_no_later_failure(home, tmp_path):
    """The date is the signed manifest's (no one but the home can change it): a clock set wrong at
    the time it was made."""
    file = make(home, "--to", str(tmp_path / "usb"))

    def dated_2100(members):
        man = json.loads(members[archive.MANIFEST])
        man["made_at"] = YEAR_2100
        resign(members, home, man)

    def edited_to_2100(members):  # by whoever holds the file: the signature no longer matches
        man = json.loads(members[archive.MANIFEST])
        man["made_at"] = YEAR_2100
        members[archive.MANIFEST] = json.dumps(man).encode()

    edited = tmp_path / "usb" / "ussd-backup-21000101T000000Z-2.tar.gz"
    _repack(file, edited, edited_to_2100)
    proc = run("--home", str(home.root), "backup", "verify", str(edited))
    assert proc.returncode == 1 and "not made by this home" in proc.stderr
    future = tmp_path / "usb" / "ussd-backup-21000101T000000Z.tar.gz"
    _repack(file, future, dated_2100)
    before = time.time()
    proc = run("--home", str(home.root), "backup", "verify", str(future))
    assert proc.returncode == 0, proc.stderr
    last = backup_status(home)["last_verified"]
    after = time.time()
    assert Path(last["file"]) == future and before <= last["at"] <= after < YEAR_2100  # the verify's time
    assert "last verified 2100" not in run("--home", str(home.root), "status").stdout.replace("\n", " ")
    # A scheduled backup fails after that: status and the header say so, whatever the 2100 date says.
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the backup folder should be")
    home.config.write_text(f'[backup]\ndir = "{blocked}"\nevery = 1\n')
    watcher = Watcher(home, tmp_path, "--settle-time", "0", "--no-observer", "--sweep-interval", "0.2")
    try:
        wait_for(lambda: (schedule.read_state(home).get("last_failure") or None), what="a failed scheduled backup")
    finally:
        assert watcher.signal(signal.SIGTERM) == 0
    got = backup_status(home)
    assert got["fault"].startswith("backup failed"), got
    assert schedule.warning(home) == "BACKUP FAILED"


def test_a_backup_written_elsewhere_and_verified_counts(home, tmp_path):
    usb = tmp_path / "media" / "usb"
    file = make(home, "--to", str(usb))
    text = run("--home", str(home.root), "status").stdout.replace("\n", "")
    assert "none verified yet" in text
    assert run("--home", str(home.root), "backup", "verify", str(file)).returncode == 0
    last = backup_status(home)["last_verified"]
    assert Path(last["file"]) == file and last["size"] == file.stat().st_size
    text = run("--home", str(home.root), "status").stdout.replace("\n", "")
    assert "none verified yet" not in text and file.name in text
    file.unlink()  # the stick taken off site: still the last verified backup
    assert Path(backup_status(home)["last_verified"]["file"]) == file


@run_async
async def test_the_retention_screen_says_which_file_was_verified_and_where(sample_home, tmp_path):
    usb = tmp_path / "usb"
    file = make(sample_home, "--to", str(usb))
    assert run("--home", str(sample_home.root), "backup", "verify", str(file)).returncode == 0
    app = fixed_app(sample_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await press_and_settle(pilot, "4")
        summary = static_text(app.query_one("#backups-summary", Static)).replace("\n", " ")
        assert "last verified:" in summary and file.name in summary and str(usb) in summary, summary
        assert "0 in" in summary  # none in the home's own backup folder


def test_an_old_store_gets_a_home_id_once_and_keeps_it(tmp_path):
    path = tmp_path / "old.db"
    with Receiver(str(path)) as r:
        first = r.db.execute_sql("SELECT home_id FROM home_identity").fetchall()
    con = sqlite3.connect(path)  # as a store made before the id: no table, no migration row
    con.execute("DROP TABLE home_identity")
    con.execute("DELETE FROM schema_version WHERE version = 25")
    con.commit()
    con.close()
    with Receiver(str(path)) as r:
        [(made,)] = r.db.execute_sql("SELECT home_id FROM home_identity").fetchall()
    with Receiver(str(path)) as r:
        assert r.db.execute_sql("SELECT home_id FROM home_identity").fetchall() == [(made,)]
    assert len(made) == 32 and [(made,)] != first
