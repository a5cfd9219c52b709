"""The console's behaviour on a known store, driven by keys (Pilot), without the inbox."""

from __future__ import annotations

import csv


from textual.widgets import Static

from console.actions import ACTIONS
from console.panels import PANELS
from console.dialogs.confirm_dialog import ConfirmDialog
from console.dialogs.export_dialog import ExportDialog
from console.widgets.header_bar import HeaderBar
from console.dialogs.help_screen import HelpScreen
from console.dialogs.resolve_dialog import ResolveDialog
from console.widgets.keyed_table import KeyedTable
from console.panels.panel import PAGE
from core import Receiver
from core.signing import actions, signed_action
from core.signing.operator_add import add_operator
from tests.support.console_support import fixed_app, press_and_settle, run_async, until
from tests.support.helpers import frame
from tests.support.console_pilot import cells, static_text


def add_cases(home, count: int, start: int = 0, now: float | None = None, site: str = "Lodwar") -> None:
    """New cases written by another connection, as the inbox or a CLI ingest would."""
    with Receiver(str(home.db)) as r:
        r.ingest_many([(f"new{i}-1", frame(1, site, "FOO", 2, 40)) for i in range(start, start + count)],
                      now=now, source="cli")


@run_async
async def test_header_shows_home_totals_badge_and_the_injected_clock(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot)
        text = app.query_one(HeaderBar).render().plain
        assert "/srv/ussd" in text and "inbox off" in text and "09:30:00" in text
        assert " ! 1 CONFLICT OPEN  cases 10 | people 150 | duplicates 15 | rejects 2" in text  # the alert first


@run_async
async def test_a_panel_focuses_the_same_table_whether_its_first_show_came_before_or_after(sample_home):
    """Showing a tab asks for the focus and for a load at once; on a busy machine either may
    land first. Retention hides its exceptions table when there are none: the focus must end
    on the eviction log both ways, or the picture depends on the machine's load."""
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "4")
        panel = app.panel("retention")
        assert not app.query_one("#exceptions-table").display
        assert app.focused is app.query_one("#evictions-table")  # focus asked before the first show
        panel.focus_main()  # ... and after it
        await pilot.pause()
        assert app.focused is app.query_one("#evictions-table")


@run_async
async def test_a_tab_whose_first_load_is_slow_has_the_keyboard_once_it_has_loaded(sample_home, monkeypatch):
    """On a big store the first load of a tab outlasts the loading indicator's delay; the indicator
    hides the table, which loses the focus, and the tab's keys then did nothing until Tab."""
    import threading

    from console.dialogs.case_screen import CaseScreen
    from console.panels.ranking import RankingPanel

    gate = threading.Event()
    real = RankingPanel.load

    def slow(receiver, params, now):
        gate.wait(60)
        return real(receiver, params, now)

    monkeypatch.setattr(RankingPanel, "load", staticmethod(slow))
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        try:
            await press_and_settle(pilot)
            await pilot.press("2")
            panel = app.panel("ranking")
            await until(lambda: panel.loading, what="the loading indicator over the slow tab")
            await until(lambda: app.focused is None, what="the hidden table losing the focus")
        finally:
            gate.set()
        await press_and_settle(pilot)
        assert app.focused is app.query_one("#ranking-table")
        await pilot.press("enter")  # the tab's own key works on the first visit
        await until(lambda: isinstance(app.screen, CaseScreen), what="the case's history")


@run_async
async def test_the_loading_indicator_never_stays_over_a_panel_that_has_loaded(sample_home, monkeypatch):
    """Textual queues a timer's callback on the app when the timer fires: a load that ended just
    after its indicator's delay could see the callback run after it, which covered the loaded
    panel for good (a quiet store never loads it again). Here the callback is held back and run
    once the load is over, as that race runs it."""
    from console import refresh_engine as console_app

    app = fixed_app(sample_home)
    held = []
    real = app.set_timer

    def set_timer(delay, callback=None, **kwargs):
        if delay == console_app.SLOW_LOAD_SECONDS:
            held.append(callback)
            return real(3600, lambda: None)  # a timer that stops as the real one would, firing never
        return real(delay, callback, **kwargs)

    monkeypatch.setattr(app, "set_timer", set_timer)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "5")
        panel = app.panel("activity")
        assert held and panel.loaded_params == panel.params() and not panel.loading
        for callback in held:
            callback()  # late: the loads it was set for are over
        await pilot.pause()
        assert not panel.loading


@run_async
async def test_a_filter_cleared_as_its_pause_ends_stays_cleared(sample_home, monkeypatch):
    """The filter waits for a pause in the typing; Escape stops that wait. Textual queues a timer's
    callback when it fires, so one can still run after Escape: here it is held back and run then."""
    from console.panels import cases as cases_panel

    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot)
        panel = app.panel("cases")
        held = []
        real = panel.set_timer

        def set_timer(delay, callback=None, **kwargs):
            if delay == cases_panel.FILTER_SETTLE:
                held.append(callback)
                return real(3600, lambda: None)
            return real(delay, callback, **kwargs)

        monkeypatch.setattr(panel, "set_timer", set_timer)
        await pilot.press("slash", "I", "f", "o")
        await until(lambda: len(held) == 3, what="the filter's pause set after each key")
        typed = list(held)  # the pauses set while typing: Escape stops the last one
        await press_and_settle(pilot, "escape")
        assert panel.filter == "" and app.query_one("#cases-filter").value == ""
        for callback in typed:
            callback()  # the pause ended as Escape came
        await press_and_settle(pilot)
        assert panel.filter == "" and len(cells(app, "cases-table", "frame_id")) == 10


@run_async
async def test_a_refresh_keeps_the_cursor_on_the_operators_row(sample_home):
    add_cases(sample_home, 40)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot)
        table = app.query_one("#cases-table", KeyedTable)
        for _ in range(25):  # far enough down that the table has scrolled
            await pilot.press("down")
        await until(lambda: table.cursor_row == 25 and table.scroll_y > 0, what="the table scrolled to row 25")
        chosen, row, screen_row = table.cursor_key, table.cursor_row, table.cursor_row - table.scroll_y
        add_cases(sample_home, 2, start=40)  # newest first: two rows arrive above the cursor
        await until(lambda: len(table.row_keys) == 52)
        # The table scrolls to keep the line once it has measured its new rows (after a refresh,
        # which a busy machine may draw after one pause): wait for that, not for a pause.
        await until(lambda: table.cursor_key == chosen and table.cursor_row == row + 2
                    and table.cursor_row - table.scroll_y == screen_row,  # same line of the screen: no jump
                    what=f"{chosen} two rows down, on the same line of the screen")


@run_async
async def test_cases_filter_and_sort(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "slash")
        for key in "Ifo2":
            await pilot.press(key)
        await press_and_settle(pilot, "enter")
        assert sorted(cells(app, "cases-table", "frame_id")) == ["ifo01-1", "ifo02-2", "ifo03-3"]
        assert app.focused is app.query_one("#cases-table")  # back to the table after Enter
        await press_and_settle(pilot, "escape")
        assert len(cells(app, "cases-table", "frame_id")) == 10
        await press_and_settle(pilot, "slash", "q", "1")  # typed into the box, not quit or switch
        assert app.is_running and app.query_one("#cases-filter").value == "q1"
        await press_and_settle(pilot, "escape")

        await press_and_settle(pilot, "s")  # next column: pri, highest first
        assert cells(app, "cases-table", "frame_id")[0] == "kak06-1"
        await press_and_settle(pilot, "r")
        assert cells(app, "cases-table", "frame_id")[0] == "dad03-3"  # lowest pri first


@run_async
async def test_a_big_ledger_is_shown_one_window_at_a_time(sample_home):
    add_cases(sample_home, 450)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot)
        table = app.query_one("#cases-table", KeyedTable)
        info = app.query_one("#cases-info", Static)
        assert len(table.row_keys) == PAGE
        assert "cases 1-200 of 460" in str(info.render())
        await press_and_settle(pilot, "right_square_bracket", "right_square_bracket")
        assert len(table.row_keys) == 60
        assert "cases 401-460 of 460" in str(info.render())
        await press_and_settle(pilot, "right_square_bracket")  # no page beyond the last
        assert "cases 401-460 of 460" in str(info.render())
        await press_and_settle(pilot, "left_square_bracket")
        assert len(table.row_keys) == PAGE


@run_async
async def test_outside_text_is_shown_escaped_never_as_markup_or_control(sample_home):
    with Receiver(str(sample_home.db)) as r:
        r.ingest_many([
            ("[bold red]x", "H1|1|A|MED|1|1|#00", "[red]evil\x1b[2J.txt", 1),
            ("ok-1", "H1|1|A|MED|1|1|\x1b]0;owned\x07", "plain.txt", 2),
        ], source="cli")
    app = fixed_app(sample_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await press_and_settle(pilot, "5")
        table = app.query_one("#rejects-table", KeyedTable)
        ids = cells(app, "rejects-table", "frame_id")
        texts = cells(app, "rejects-table", "text")
        files = cells(app, "rejects-table", "where")
        assert "[bold red]x" in ids  # shown as typed, not as bold red
        assert any(t.endswith("|\\x1b]0;owned\\x07") for t in texts)  # escaped once, visibly
        assert any("[red]evil\\x1b[2J.txt" in f for f in files)
        for column in ("frame_id", "text", "where", "why"):
            for value in cells(app, "rejects-table", column):
                assert value.isprintable() and "\x1b" not in value
        for row in range(len(table.row_keys)):
            for cell in table.get_row_at(row):
                assert not getattr(cell, "spans", []) or all(
                    "red" not in str(span.style) for span in cell.spans)


@run_async
async def test_ranking_export_writes_the_dispatch_list(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "2", "e")
        await until(lambda: isinstance(app.screen, ExportDialog))
        await pilot.press("enter")  # the dialog opens on this screen's view, as CSV, with its view list focused
        await until(lambda: list(sample_home.exports.glob("dispatch-*.csv")))
        (path,) = sample_home.exports.glob("dispatch-*.csv")
        rows = list(csv.DictReader(path.open(encoding="utf-8")))
        assert [r["frame_id"] for r in rows[:3]] == ["kak06-1", "ifo01-1", "kak01-1"]
        assert len(rows) == 10 and rows[0]["need_name"] == "protection"
        assert not list(sample_home.exports.glob(".dispatch-*"))  # no temporary left behind
        assert rows[2]["status"] == "open" and rows[2]["disputed"] == "true"  # kak01-1: a correction waits


@run_async
async def test_evict_now_asks_first_and_logs_the_run(sample_home):
    app = fixed_app(sample_home, clock=lambda: 1714642200.0 + 40 * 86400)  # everything has expired
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "4", "e")
        await until(lambda: isinstance(app.screen, ConfirmDialog))
        await press_and_settle(pilot, "n")
        with Receiver(str(sample_home.db)) as r:
            assert [e.started_by for e in r.evictions()] == ["schedule"]
        await press_and_settle(pilot, "e")
        await until(lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.press("y")
        evictions = app.query_one("#evictions-table", KeyedTable)
        await until(lambda: len(evictions.row_keys) == 2)
        assert cells(app, "evictions-table", "by")[0] == "console"
        assert cells(app, "evictions-table", "removed")[0] == "13"


@run_async
async def test_resolve_keys_open_the_signing_dialog_on_the_selected_conflict(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "3", "a")
        await until(lambda: isinstance(app.screen, ResolveDialog))
        dialog = app.screen
        assert dialog.decision == "accept_correction"
        assert dialog.item.frame_id == "kak01-1" and dialog.item.frame_text.endswith("#95")
        assert dialog.home == sample_home


@run_async
async def test_help_lists_every_action_its_id_and_key(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = "\n".join(static_text(s) for s in app.screen.query(Static))
        for number, panel in enumerate(PANELS, start=1):
            assert f"{number} {panel.TITLE}" in text
        for action in ACTIONS:
            assert action.id in text
        assert "[" in text and "]" in text and "?" in text and "End" in text  # keys by their names
        assert "Who may sign what" in text and "keep_first" in text and "needs the resolver role" in text
        await press_and_settle(pilot, "escape")
        assert not isinstance(app.screen, HelpScreen)


@run_async
async def test_the_command_palette_offers_every_action(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {a.palette_title for a in ACTIONS} <= titles
        run = {c.title: c.callback for c in app.get_system_commands(app.screen)}
        await run["Show Ranking"]()
        await press_and_settle(pilot)
        assert app.query_one("TabbedContent").active == "ranking"


@run_async
async def test_every_screen_is_reachable_by_keyboard_alone(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        for number, panel in enumerate(PANELS, start=1):
            await press_and_settle(pilot, str(number))
            assert app.query_one("TabbedContent").active == panel.TAB_ID
            assert app.focused is not None and panel.TAB_ID in str(app.focused.id or "") or \
                app.focused in app.panel(panel.TAB_ID).query("*")


@run_async
async def test_retention_shows_the_policy_and_its_signed_exceptions(sample_home):
    with Receiver(str(sample_home.db)) as r:
        add_operator(sample_home, r, "amina", "correct horse", now=1714630000.0)
        signed_action.sign(sample_home, r, actions.RETENTION, {"days": 14}, operator="amina", passphrase="correct horse",
                           reason="disk nearly full", now=1714640000.0)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "4")
        summary = static_text(app.query_one("#retention-summary", Static))
        assert "14 days SIGNED EXCEPTION by amina" in summary and "disk nearly full" in summary
        assert cells(app, "exceptions-table", "set_by") == ["amina"]
        assert cells(app, "exceptions-table", "retention") == ["14 days"]


@run_async
async def test_a_policy_without_its_signed_entry_is_a_fault_on_screen(sample_home):
    """A one-hour policy typed into the store is never applied, and the console says so."""
    with Receiver(str(sample_home.db)) as r:
        r.db.execute_sql("INSERT INTO retention_policy (retention_seconds, set_at, set_by, reason, is_exception) "
                         "VALUES (3600, 1714640000, 'alice', 'by hand', 0)")
    app = fixed_app(sample_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await press_and_settle(pilot, "4")
        summary = static_text(app.query_one("#retention-summary", Static))
        # said in the operator's words (English here: "1 hour", as a person says it)
        assert "FAULT" in summary and "(1 hour, set by alice)" in summary and "not applied" in summary
        assert "30 days (default)" in summary  # what eviction uses instead
        assert "RETENTION FAULT" in str(app.query_one(HeaderBar).render())


@run_async
async def test_timers_that_fire_while_the_console_is_taken_down_raise_nothing(sample_home):
    """On exit Textual removes the widgets before the app's timers stop; a loaded run caught the
    5-second signing tick in that moment, and its NoMatches for the header ended the app with an error."""
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot)
        await app.query_one(HeaderBar).remove()  # as the teardown leaves the default screen
        assert not app.query(HeaderBar)
        app._signing_tick()
        await app.refresher.once(force=True)
        app.action_lock_key()
    assert app.return_code in (0, None)
