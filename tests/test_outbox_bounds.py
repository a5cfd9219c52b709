"""The outbox stays bounded: long-delivered events are pruned, and a target owing too many alerts is
one fault in `status` and in the console's header (docs/running-securely.md)."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
import uuid

import pytest

from console.widgets.header_bar import HeaderBar
from core.home import Home
from tests.support.console_support import run_async, until, utc  # noqa: F401  (fixture)
from tests.support.inbox_helpers import frame_lines, text_of, wait_for
from tests.support.home_watch import Watch, cli, status_json
from tests.support.console_pilot import live_app

DAY = 86400.0


def new_store(home: Home, tmp_path) -> None:
    feed = tmp_path / "feed.txt"
    feed.write_text(text_of(frame_lines("ob", 1)))
    assert cli(home, "ingest", str(feed)).returncode == 0


def configure(home: Home, exit_code: int, **settings) -> None:
    command = [sys.executable, "-c", f"import sys; sys.stdin.read(); sys.exit({exit_code})"]
    extra = "".join(f"{key} = {value}\n" for key, value in settings.items())
    home.config.write_text(f"[alerts]\ncommand = {json.dumps(command)}\nretry_first = 0.1\nretry_cap = 1.0\n{extra}")


def add_event(con, kind: str, at: float, delivered_at: float | None = None, state: str | None = None) -> str:
    """An event as the receiver writes it; with ``state`` also its row for the target ``command``."""
    event_id = uuid.uuid4().hex
    cur = con.execute("INSERT INTO alert_events (event_id, kind, at, summary, details, fanned) VALUES (?, ?, ?, ?, ?, ?)",
                      (event_id, kind, at, f"{kind} by hand", json.dumps({"entries": 1} if kind == "checkpoint" else {}),
                       1 if state else 0))
    if state:
        con.execute("INSERT INTO alert_deliveries (event, target, state, attempts, next_at, delivered_at) "
                    "VALUES (?, 'command', ?, 1, ?, ?)", (cur.lastrowid, state, at, delivered_at))
    return event_id


def event_ids(home: Home) -> set[str]:
    con = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True)
    try:
        return {row[0] for row in con.execute("SELECT event_id FROM alert_events")}
    finally:
        con.close()


def test_watch_prunes_events_delivered_longer_ago_than_keep_delivered_days_and_keeps_the_rest(tmp_path):
    home = Home(tmp_path / "home")
    new_store(home, tmp_path)
    configure(home, 0, keep_delivered_days=30)
    now = time.time()
    con = sqlite3.connect(home.db)
    with con:
        old = [add_event(con, "conflict", now - 40 * DAY, now - 40 * DAY, "delivered") for _ in range(3)]
        old_checkpoint = add_event(con, "checkpoint", now - 50 * DAY, now - 50 * DAY, "delivered")
        newest_checkpoint = add_event(con, "checkpoint", now - 45 * DAY, now - 45 * DAY, "delivered")
        recent = add_event(con, "conflict", now - 40 * DAY, now - 5 * DAY, "delivered")  # delivered late: kept
        owed = add_event(con, "conflict", now - 40 * DAY, None, "failed")  # still owed: kept whatever its age
    con.close()

    watch = Watch(home, tmp_path)
    try:
        wait_for(lambda: not set(old) & event_ids(home), what="the old delivered events pruned")
    finally:
        assert watch.stop() == 0
    left = event_ids(home)
    assert old_checkpoint not in left
    assert {newest_checkpoint, recent, owed} <= left  # the next checkpoint is measured against the newest
    assert "4 alert event(s) delivered more than 30 days ago pruned" in home.log_file.read_text()


@pytest.mark.parametrize("setting, message", [
    ("keep_delivered_days = 0", "keep_delivered_days = 0 is out of range"),
    ("pending_fault = \"many\"", "pending_fault must be a number"),
])
def test_a_bad_outbox_bound_stops_watch_with_one_line_naming_it(tmp_path, setting, message):
    home = Home(tmp_path / "home")
    new_store(home, tmp_path)
    home.config.write_text(f"[alerts]\n{setting}\n")
    done = cli(home, "watch")
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_target_owing_more_than_pending_fault_is_one_fault_in_status_until_it_catches_up(tmp_path):
    home = Home(tmp_path / "home")
    new_store(home, tmp_path)
    configure(home, 3, pending_fault=5)  # the target always fails: its alerts pile up
    now = time.time()
    con = sqlite3.connect(home.db)
    with con:
        for _ in range(8):
            add_event(con, "conflict", now)
    con.close()

    watch = Watch(home, tmp_path)
    try:
        faults = wait_for(lambda: [f for f in status_json(home)["health"]["faults"] if f.startswith("alert backlog")],
                          what="the backlog fault in status --json")
        assert faults == ["alert backlog: alert target command owes more than 5 alerts (pending_fault); "
                          "they wait and are retried, oldest first"]
        text = cli(home, "status").stdout
        assert "  ! alert backlog: alert target command owes more than 5 alerts" in text
        # the target catches up (here: most of its queue marked delivered in the store): the fault clears
        con = sqlite3.connect(home.db)
        with con:
            con.execute("UPDATE alert_deliveries SET state = 'delivered', delivered_at = ? WHERE id IN "
                        "(SELECT id FROM alert_deliveries WHERE state != 'delivered' ORDER BY id DESC LIMIT 6)",
                        (time.time(),))
        con.close()
        wait_for(lambda: not [f for f in status_json(home)["health"]["faults"] if f.startswith("alert backlog")],
                 what="the backlog fault to clear")
    finally:
        assert watch.stop() == 0
    log = home.log_file.read_text()
    assert log.count("WARNING ussd.inbox: alert backlog: alert target command owes more than 5") == 1  # said once
    assert "fault cleared after" in log and log.count("alert backlog") == 2


@run_async
async def test_the_console_header_shows_an_alert_backlog(home, utc):
    from core import Receiver

    with Receiver(str(home.db)):
        pass
    configure(home, 3, pending_fault=2)
    con = sqlite3.connect(home.db)
    with con:
        for _ in range(4):
            add_event(con, "conflict", time.time())
    con.close()
    app = live_app(home)
    async with app.run_test(size=(100, 24)):
        await until(lambda: "ALERT BACKLOG" in app.query_one(HeaderBar).render().plain)
        assert "inbox error" not in app.query_one(HeaderBar).render().plain  # it is no inbox fault
