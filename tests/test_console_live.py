"""The console over a real inbox: files dropped in change the screens; a conflict alerts.

Each test starts the real inbox service (watchdog and sweep) on a fresh home
and drops sample files in the way a gateway does (temporary name, rename).
"""

from __future__ import annotations

import functools


from console.app import ConsoleApp, inbox_service
from console.widgets.bars import Bars
from console.demo.gateway_sim import SAMPLES, drop_session
from console.widgets.header_bar import HeaderBar
from console.widgets.keyed_table import KeyedTable
from core.config import InboxConfig
from tests.support.console_support import run_async, until
from tests.support.console_pilot import live_app


def recorded_notifications(app: ConsoleApp) -> list[tuple[str, str]]:
    """Keep (title, message) of every notification, and still show them."""
    seen: list[tuple[str, str]] = []
    notify = app.notify

    def record(message, *, title="", **kwargs):
        seen.append((title, message))
        return notify(message, title=title, **kwargs)

    app.notify = record
    return seen


def table(app, table_id: str) -> KeyedTable:
    return app.query_one(f"#{table_id}", KeyedTable)


def cell_texts(t: KeyedTable, column: str) -> list[str]:
    """A column's cells as the table holds them (a column left out at 80 columns too)."""
    return [str(getattr(v, "plain", v)) for v in t.values(column)]


@run_async
async def test_a_dropped_file_reaches_cases_ranking_and_activity(home, utc):
    # A timer longer than any wait here: only the inbox's verdicts message can make these
    # refreshes happen in time.
    app = live_app(home, refresh_every=120.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: app.service is not None and (app.health or {}).get("observer") == "running")
        assert table(app, "cases-table").row_keys == []
        drop_session(home.inbox, SAMPLES / "01-session.txt", "kakuma-0800.txt")

        await until(lambda: len(table(app, "cases-table").row_keys) == 3)
        assert sorted(cell_texts(table(app, "cases-table"), "frame_id")) == ["kak01-1", "kak02-2", "kak03-3"]
        # The header loads its figures on a worker of its own, a moment after the table's.
        await until(lambda: "cases 3 | people 23" in app.query_one(HeaderBar).render().plain, what="the header")

        await pilot.press("2")
        await until(lambda: len(table(app, "ranking-table").row_keys) == 3)
        assert cell_texts(table(app, "ranking-table"), "frame_id") == ["kak01-1", "kak02-2", "kak03-3"]
        await until(lambda: app.query_one("#bars-need", Bars).rows)
        assert dict(app.query_one("#bars-need", Bars).rows) == {"WAT": 12, "SHE": 8, "MED": 3}

        await pilot.press("5")
        feed = table(app, "feed-table")
        await until(lambda: len(feed.row_keys) == 3)
        assert set(cell_texts(feed, "outcome")) == {"+ applied"}
        # The feed names the path that carried the file: nearly always the observer, but a
        # sweep that runs at that very moment may win the claim on a loaded machine.
        won = {path for path, n in app.service.health()["claims_won"].items() if n}
        assert won <= {"watch", "sweep"} and set(cell_texts(feed, "source")) == won

        # The full re-send: nothing new in the ledger, three duplicates in the feed.
        drop_session(home.inbox, SAMPLES / "02-full-resend.txt", "kakuma-0800-b.txt")
        await until(lambda: len(feed.row_keys) == 6)
        assert cell_texts(feed, "outcome")[:3] == ["= duplicate"] * 3
        assert "cases 3 | people 23 | duplicates 3" in app.query_one(HeaderBar).render().plain


@run_async
async def test_a_conflict_raises_the_badge_and_a_notification_anywhere(home, utc):
    app = live_app(home)
    notes = recorded_notifications(app)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await until(lambda: app.service is not None)
        drop_session(home.inbox, SAMPLES / "01-session.txt", "kakuma-0800.txt")
        await until(lambda: getattr(app.totals, "cases", None) == 3)
        await pilot.press("4")  # the operator is on Retention, far from Quarantine
        assert "CONFLICT" not in app.query_one(HeaderBar).render().plain

        drop_session(home.inbox, SAMPLES / "04-conflict.txt", "kakuma-0905.txt")
        await until(lambda: getattr(app.totals, "conflicts_open", None) == 1)
        header = app.query_one(HeaderBar).render().plain
        assert "! 1 CONFLICT OPEN" in header
        await until(lambda: any("Conflict" in title for title, _ in notes))
        title, message = next(n for n in notes if "Conflict" in n[0])
        assert "kak01-1" in message and "H1|1|Kakuma1|MED|9|86|#95" in message
        assert app.query_one("TabbedContent").active == "retention"  # nothing moved the operator
        assert "!1" in str(app.query_one("TabbedContent").get_tab("quarantine").label)

        # The same conflict re-sent is not a new alert.
        before = len([n for n in notes if "Conflict" in n[0]])
        drop_session(home.inbox, SAMPLES / "04-conflict.txt", "kakuma-0905-again.txt")
        await until(lambda: getattr(app.totals, "frames", None) == 5)
        await app.settled()
        assert len([n for n in notes if "Conflict" in n[0]]) == before


@run_async
async def test_header_reports_inbox_health_and_stops_it_on_exit(home, utc):
    app = live_app(home)
    async with app.run_test(size=(80, 24)):
        await until(lambda: (app.health or {}).get("sweep") == "running")
        await until(lambda: "watch ok | sweep ok" in app.query_one(HeaderBar).render().plain)
        service = app.service
    assert service.health()["observer"] == "off"
    assert service.health()["sweep"] == "off"


@run_async
async def test_sweep_now_key_takes_a_file_the_observer_never_saw(home, utc):
    app = live_app(home, service_factory=functools.partial(
        inbox_service, config=InboxConfig(observer=False, sweep=False, settle_time=0.0)))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: app.service is not None)
        drop_session(home.inbox, SAMPLES / "08-ifo-session.txt", "ifo.txt")
        await pilot.press("5")
        await app.settled()
        assert getattr(app.totals, "cases", None) == 0
        await pilot.press("w")
        await until(lambda: getattr(app.totals, "cases", None) == 3)
        await until(lambda: "sweep" in cell_texts(table(app, "feed-table"), "source"))


@run_async
async def test_a_rejected_file_is_on_the_activity_screen_and_raises_a_notification(home, utc):
    """A file rejected whole is shown on the Activity screen and raised as a notification, not only
    written to the log and a .reason file."""
    from tests.support.inbox_helpers import drop

    app = live_app(home)
    notes = recorded_notifications(app)
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await until(lambda: app.service is not None)
        await app.settled()  # the first look at the store is the baseline: what is rejected after it is news
        await pilot.press("2")  # the operator is elsewhere
        drop(home, "export.csv", "ref,sender,when\n1,+254711000050,2024-05-01\n")
        await until(lambda: any("rejected" in title for title, _ in notes))
        title, message = next(n for n in notes if "rejected" in n[0])
        assert "export.csv" in message and "no frame or text column" in message
        assert "254711000050" not in message
        await pilot.press("5")
        files = table(app, "rejected-files-table")
        await until(lambda: len(files.row_keys) == 1)
        assert cell_texts(files, "file") == ["export.csv"]
        assert "no frame or text column" in cell_texts(files, "reason")[0]
