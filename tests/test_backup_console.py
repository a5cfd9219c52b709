"""The console and backups, driven with Pilot at 80x24: the header warns in words when backups
are overdue or the last one failed, and the Retention screen lists the backups in the folder."""

from __future__ import annotations

import json
import time

from textual.widgets import Static

from console.widgets.header_bar import HeaderBar
from console.widgets.keyed_table import KeyedTable
from core.backup import schedule
from tests.support.console_support import fixed_app, press_and_settle, run_async
from tests.support.backups import run
from tests.support.waiting import until
from tests.support.console_pilot import static_text


def header(app) -> str:
    return app.query_one(HeaderBar).render().plain


def write_state(home, **state) -> None:
    schedule.state_path(home).write_text(json.dumps(state))


@run_async
async def test_the_header_says_backup_overdue_in_words(sample_home):
    home = sample_home
    home.config.write_text("[backup]\nevery = 3600\n")
    write_state(home, last_verified={"at": time.time() - 3 * 3600, "file": str(home.root / "backups" / "x"),
                                     "size": 10})
    app = fixed_app(home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot)
        await until(lambda: "BACKUP OVERDUE" in header(app), what="the overdue word in the header")
        assert "! 1 CONFLICT OPEN" in header(app)  # the conflict badge still comes first


@run_async
async def test_the_header_says_when_the_last_backup_failed_and_is_quiet_when_all_is_well(sample_home):
    home = sample_home
    home.config.write_text("[backup]\nevery = 3600\n")
    now = time.time()
    write_state(home, last_verified={"at": now - 600, "file": "x", "size": 1},
                last_failure={"at": now - 60, "why": "No space left on device"})
    app = fixed_app(home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot)
        await until(lambda: "BACKUP FAILED" in header(app), what="the failed word in the header")
        assert "OVERDUE" not in header(app)
        # The next backup verified: the word goes at the next check.
        write_state(home, last_verified={"at": time.time(), "file": "x", "size": 1},
                    last_failure={"at": now - 60, "why": "No space left on device"})
        app.query_one(HeaderBar)._check_backups()
        await until(lambda: "BACKUP" not in header(app), what="the header to clear")


@run_async
async def test_none_verified_for_twice_every_since_scheduling_is_overdue(sample_home):
    home = sample_home
    home.config.write_text("[backup]\nevery = 60\n")
    write_state(home, scheduled_since=time.time() - 500)
    app = fixed_app(home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot)
        await until(lambda: "BACKUP OVERDUE" in header(app), what="the overdue word in the header")


def test_status_json_shows_overdue_before_the_first_backup(sample_home):
    sample_home.config.write_text("[backup]\nevery = 60\n")
    write_state(sample_home, scheduled_since=time.time() - 500)
    out = json.loads(run("--home", str(sample_home.root), "--json", "status").stdout)
    assert out["backup"]["overdue"] and out["backup"]["fault"].startswith("backup overdue")


@run_async
async def test_retention_lists_the_backups_verified_or_not(sample_home):
    home = sample_home
    made = []
    for _ in range(2):
        proc = run("--home", str(home.root), "--json", "backup")
        assert proc.returncode == 0, proc.stderr
        made.append(json.loads(proc.stdout)["file"])
    assert run("--home", str(home.root), "backup", "verify", made[0]).returncode == 0
    (home.root / "backups" / ".ussd-backup-half.tar.gz.tmp").write_text("a killed backup's temporary")
    app = fixed_app(home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "4")
        table = app.query_one("#backups-table", KeyedTable)
        files = [str(getattr(v, "plain", v)) for v in table.get_column("file")]
        verified = [str(getattr(v, "plain", v)) for v in table.get_column("verified")]
        names = [m.rsplit("/", 1)[1] for m in made]
        assert sorted(files) == sorted(names)  # no temporary names
        assert dict(zip(files, verified)) == {names[0]: "verified", names[1]: "NOT VERIFIED"}
        sizes = [str(getattr(v, "plain", v)) for v in table.get_column("size")]
        assert all(s.endswith(" B") and s[0].isdigit() for s in sizes)
        summary = static_text(app.query_one("#backups-summary", Static))
        assert "2 in" in summary and "not scheduled" in summary
        assert "BACKUP" not in header(app)  # none scheduled: nothing is overdue


@run_async
async def test_retention_says_when_there_are_no_backups(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "4")
        assert not app.query_one("#backups-table").display
        summary = static_text(app.query_one("#backups-summary", Static))
        assert "0 in" in summary and "backups" in summary
