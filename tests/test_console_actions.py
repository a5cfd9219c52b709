"""The console's one table of actions (console/actions.py): the docs' key table, the keymap of
``[console.keys]`` (checked at start, remapped keys work and the old ones do nothing), the page keys
of the Panel base, the palette's synonyms, ``d`` everywhere, and a signature made in the console
showing on the Cases screen without ctrl+r (Pilot, through the real signing dialog)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandList

from console import actions
from console.panels import PANELS
from console.dialogs.help_screen import HelpScreen
from console.dialogs.mark_dialog import MarkDialog
from console.dialogs.resolve_dialog import ResolveDialog
from console.messages import RefreshRequest
from console.widgets.keyed_table import KeyedTable
from console.widgets.palette import PlainPalette
from core import Receiver
from console.cli import main
from tests.support.console_support import fixed_app, notes_on_screen, press_and_settle, run_async, until
from tests.support.signing import PASS
from tests.support.console_pilot import IdleInbox, cells, fill_and_sign, open_dialog, static_text, with_operator
from tests.support.console_pilot import palette_titles

ROOT = Path(__file__).resolve().parent.parent
SIZE = (80, 24)


# -- the table and what is derived from it ---------------------------------------------------------
def test_the_docs_key_table_is_the_actions_table():
    text = (ROOT / "docs" / "operator.md").read_text(encoding="utf-8")
    start = text.index("<!-- keys:")
    start = text.index("\n", start) + 1
    end = text.index("<!-- /keys -->")
    assert text[start:end] == actions.key_table_markdown(), "run python -m console.actions and paste the table"


def test_the_tabs_of_the_table_are_the_panels():
    assert [(p.TAB_ID, p.TITLE) for p in PANELS] == list(actions.TABS)


def test_every_binding_of_a_screen_comes_from_the_table_with_its_id():
    from console.app import ConsoleApp
    from console.panels.panel import Panel

    for node in (ConsoleApp, Panel, *PANELS):
        scope = getattr(node, "TAB_ID", None) or ("tables" if node is Panel else "app")
        ids = [b.id for b in node.BINDINGS]
        assert ids == [a.id for a in actions.in_scope(scope) if not a.fixed]
    for needed in ("quit", "refresh", "export", "help", "palette", "page_next", "page_previous", "first_row",
                   "last_row", "mark_dispatched", "mark_served", "mark_closed", "mark_open", "keep_first",
                   "accept_correction"):
        assert needed in actions.BY_ID


@pytest.mark.parametrize("keys, words", [
    ({"quitt": "x"}, "unknown action 'quitt'"),
    ({"quit": "k"}, "quit = 'k' clashes with keep_first on 3 Quarantine"),
    ({"export": "s"}, "export = 's' clashes with sort on 1 Cases"),
    ({"keep_first": "a"}, "keep_first = 'a' clashes with accept_correction"),
    ({"quit": "ctrl+qq"}, "'ctrl+qq' is not a key name"),
    ({"help": "tab"}, "tab is Textual's own key"),
    ({"help": "ctrl+q"}, "only quit may take it"),
    ({"history": "h"}, "'history' is a widget's own key"),
    ({"quit": 3}, "quit must be a key name"),
    ({"mark_served": "q"}, "mark_served = 'q' clashes with quit"),
    ({"dismiss": "ctrl+s"}, "dismiss = 'ctrl+s' clashes with sign on the dialogs"),
])
def test_a_bad_keymap_is_refused_naming_the_id(keys, words):
    with pytest.raises(ValueError) as caught:
        actions.check_keymap(keys)
    assert words in str(caught.value)


def test_a_moved_key_frees_the_old_one_for_another_action():
    # help leaves ?, quit takes it: no clash, since help no longer holds it
    assert actions.check_keymap({"help": "f1", "quit": "?"}) == {"help": "f1", "quit": "question_mark"}


def test_the_console_command_refuses_a_bad_keymap_in_one_line(home, capsys, monkeypatch):
    monkeypatch.setattr("console.commands.ui.need_terminal", lambda: None)
    Receiver(str(home.db)).close()
    for bad, words in (('[console.keys]\nquitt = "x"\n', "unknown action 'quitt'"),
                       ('[console.keys]\nexport = "s"\n', "export = 's' clashes with sort"),
                       ('[console.keys]\nquit = 3\n', "quit must be a key name")):
        home.config.write_text(bad, encoding="utf-8")
        assert main(["--home", str(home.root), "console", "--no-inbox"]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.splitlines()) == 1, err


def test_a_newer_refresh_request_replaces_an_older_one_it_covers():
    assert RefreshRequest().can_replace(RefreshRequest())
    assert RefreshRequest(force=True).can_replace(RefreshRequest(force=True, changed=True))
    assert not RefreshRequest(force=True).can_replace(RefreshRequest())  # a force is never lost
    assert not RefreshRequest(changed=True).can_replace(RefreshRequest(force=True))


# -- remapped keys (Pilot) ----------------------------------------------------------------------------
@run_async
async def test_a_remapped_key_works_the_old_one_does_nothing_and_help_shows_it(sample_home):
    app = fixed_app(sample_home, keys={"help": "f1", "quit": "ctrl+x", "show_ranking": "ctrl+n"})
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "2")
        assert app.query_one("TabbedContent").active == "cases"  # 2 no longer shows Ranking
        await press_and_settle(pilot, "ctrl+n")
        assert app.query_one("TabbedContent").active == "ranking"
        await press_and_settle(pilot, "question_mark")
        assert not isinstance(app.screen, HelpScreen)
        await press_and_settle(pilot, "f1")
        assert isinstance(app.screen, HelpScreen)
        text = "\n".join(static_text(s) for s in app.screen.query("Static"))
        assert "f1" in text and "ctrl+x" in text and "ctrl+n" in text
        assert "Esc or f1 closes" in text.replace("\n", " ")
        await press_and_settle(pilot, "f1")
        assert not isinstance(app.screen, HelpScreen)
        await press_and_settle(pilot, "q")
        assert app.is_running  # q no longer quits
        await pilot.press("ctrl+x")
        await until(lambda: not app.is_running)


# -- the page keys of the Panel base ---------------------------------------------------------------
@run_async
async def test_end_and_home_go_to_the_last_and_first_row(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "1")
        table = app.query_one("#cases-table", KeyedTable)
        assert table.row_count > 3 and table.cursor_row == 0
        await press_and_settle(pilot, "end")
        assert table.cursor_row == table.row_count - 1 and table.scroll_x == 0
        await press_and_settle(pilot, "home")
        assert table.cursor_row == 0
        # In the filter box, Home and End move its own cursor, never the table's.
        await press_and_settle(pilot, "slash")
        box = app.query_one("#cases-filter")
        for ch in "kak":
            await pilot.press(ch)
        await press_and_settle(pilot, "home")
        assert box.cursor_position == 0 and table.cursor_row == 0


# -- the palette finds actions by the operator's words --------------------------------------------------
@run_async
async def test_the_palette_finds_resolve_conflict_history_and_backup(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot)
        keep, accept = actions.BY_ID["keep_first"].palette_title, actions.BY_ID["accept_correction"].palette_title
        for word in ("resolve", "conflict"):
            titles = " | ".join(await palette_titles(app, pilot, word))
            assert keep in titles and accept in titles, (word, titles)
        assert actions.BY_ID["history"].palette_title in " | ".join(await palette_titles(app, pilot, "history"))
        # The backups are listed on Retention; an export is a spreadsheet, not a backup.
        backup = " | ".join(await palette_titles(app, pilot, "backup"))
        assert actions.BY_ID["show_retention"].palette_title in backup
        assert actions.BY_ID["export"].palette_title not in backup


@run_async
async def test_the_palette_runs_an_action_where_it_belongs(sample_home):
    with_operator(sample_home)
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "1", "ctrl+p")
        await until(lambda: isinstance(app.screen, PlainPalette))
        for ch in "accept the correction":
            await pilot.press(ch)
        options = app.screen.query_one(CommandList)
        await until(lambda: options.option_count > 0)
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, ResolveDialog))
        dialog = app.screen
        assert dialog.decision == "accept_correction" and app.query_one("TabbedContent").active == "quarantine"
        await until(lambda: dialog.query_one("#operator").value == "alice")
        await pilot.press("escape")
        await until(lambda: app.screen is not dialog)


# -- d everywhere -------------------------------------------------------------------------------------
@run_async
async def test_d_dismisses_notifications_inside_the_help_screen(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await press_and_settle(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        app.notify("a note over the help", timeout=60)
        await until(lambda: notes_on_screen(app))
        await pilot.press("d")
        await until(lambda: not notes_on_screen(app))
        assert isinstance(app.screen, HelpScreen)


# -- a signature shows at once on every screen it changes ------------------------------------------------
def case_row(app, frame_id: str) -> dict[str, str]:
    table = app.query_one("#cases-table", KeyedTable)
    columns = [c.value for c in table.columns]
    for key in table.row_keys:
        row = {col: str(getattr(v, "plain", v)) for col, v in zip(columns, table.get_row(key))}
        if row["frame_id"] == frame_id:
            return row
    raise AssertionError(f"{frame_id} is not on the Cases screen")


@run_async
async def test_accepting_a_correction_shows_the_new_headcount_on_cases_without_ctrl_r(sample_home):
    item = with_operator(sample_home)
    new_hc = item.frame_text.split("|")[4]
    app = fixed_app(sample_home, refresh_every=3600.0)  # no timer: only the signature's refresh can show it
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "1")
        before = case_row(app, item.first_frame_id)
        assert before["headcount"] != new_hc and "DISPUTED" in before["status"]
        await open_dialog(app, pilot, "3", "a", ResolveDialog)
        dialog = await fill_and_sign(app, pilot, "site radioed the new count", PASS)
        await until(lambda: app.screen is not dialog)
        await press_and_settle(pilot, "1")
        await until(lambda: case_row(app, item.first_frame_id)["headcount"] == new_hc)
        assert "DISPUTED" not in case_row(app, item.first_frame_id)["status"]


@run_async
async def test_marking_a_case_served_shows_on_cases_without_ctrl_r(sample_home):
    with_operator(sample_home)
    app = fixed_app(sample_home, refresh_every=3600.0)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "1")
        table = app.query_one("#cases-table", KeyedTable)
        frame_id = cells(app, "cases-table", "frame_id")[0]
        assert "open" in case_row(app, frame_id)["status"]
        await press_and_settle(pilot, "2")
        ranking = app.query_one("#ranking-table", KeyedTable)
        ranking.move_cursor(row=cells(app, "ranking-table", "frame_id").index(frame_id))
        await pilot.press("S")
        await until(lambda: isinstance(app.screen, MarkDialog))
        dialog = await fill_and_sign(app, pilot, "team delivered", PASS)
        await until(lambda: app.screen is not dialog)
        await press_and_settle(pilot, "1")
        await until(lambda: "served" in case_row(app, frame_id)["status"])
        assert table.row_count
    with Receiver(str(sample_home.db)) as r:
        assert {c.frame_id: c.status for c in r.cases(limit=100)}[frame_id] == "served"


def test_console_keys_from_config_reach_the_console(home, console_opened_with):
    seen = console_opened_with
    Receiver(str(home.db)).close()
    home.config.write_text('[console]\nunlock_minutes = 5\n\n[console.keys]\nquit = "ctrl+q"\nhelp = "?,f1"\n',
                           encoding="utf-8")
    assert main(["--home", str(home.root), "console", "--no-inbox"]) == 0
    assert seen["keys"] == {"quit": "ctrl+q", "help": "question_mark,f1"} and seen["unlock_minutes"] == 5


@run_async
async def test_textuals_own_ctrl_q_asks_first_too(sample_home):
    from console.dialogs.confirm_dialog import ConfirmDialog

    app = fixed_app(sample_home, service_factory=IdleInbox)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot)
        await pilot.press("ctrl+q")
        await until(lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.press("n")
        await until(lambda: not isinstance(app.screen, ConfirmDialog))
        assert app.is_running
