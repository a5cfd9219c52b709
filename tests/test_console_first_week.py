"""What a new admin stumbled on in the first week, through the console (Pilot, 80x24 unless said):
tables that cut at 80 columns, dialogs that showed the screen's keys in the footer, the palette
that did not know the command line's names, an error that outlived its cause, a silent unlock,
and dates that read two ways."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Footer, Input, Select, Static
from textual.widgets._footer import FooterKey

from console import actions
from console.commands import COMMANDS
from console.dialogs.case_screen import CaseScreen
from console.dialogs.export_dialog import ExportDialog
from console.dialogs.help_screen import HelpScreen
from console.dialogs.reject_dialog import RejectDialog
from console.dialogs.resolve_dialog import ResolveDialog
from console.panels.activity import shorten_where
from console.panels.panel import InfoLine
from console.ui_text import day_only, short_stamp, stamp
from console.widgets.bars import Bars
from console.widgets.keyed_table import KeyedTable, fit_columns
from core import Receiver
from tests.support.console_support import fixed_app, press_and_settle, run_async, until
from tests.support.signing import PASS
from tests.support.backups import run as run_cli
from tests.support.console_pilot import palette_titles
from tests.support.console_pilot import static_text
from tests.support.console_pilot import team
from tests.support.console_pilot import open_dialog, with_operator
from tests.support.console_pilot import screen_lines
from tools.sample_store import FIXED_NOW

SIZE = (80, 24)
LONG_FILE = "lodwar-2026-12-02-morning-session-resend.txt"  # wider than Activity has room for at 80


def nothing_cut(table: KeyedTable) -> bool:
    """No column of the table runs past its right edge (nothing to scroll sideways for)."""
    return table.virtual_size.width <= table.scrollable_content_region.width


def shown(table: KeyedTable, column: str) -> list[str]:
    return [str(getattr(cell, "plain", cell)) for cell in table.get_column(column)]


def whole(table: KeyedTable, column: str) -> list[str]:
    return [str(getattr(cell, "plain", cell)) for cell in table.values(column)]


def footer_words(app) -> list[str]:
    """The keys and words the footer of the screen on top shows."""
    return [f"{key.key_display} {key.description}" for key in app.screen.query_one(Footer).query(FooterKey)]


# -- 80x24 cuts -----------------------------------------------------------------------------------
def test_a_table_gives_up_the_dropped_column_then_shortens_never_the_others():
    # time, outcome, reason, frame id, file:line, path: 6 columns of 2 padding each
    widths, least = [8, 14, 23, 8, 21, 5], [5, 7, 6, 8, 9, 4]
    assert fit_columns(widths, least, 200, drop=[5], shorten=[0, 4]) == (list(range(6)), {})
    kept, limits = fit_columns(widths, least, 79, drop=[5], shorten=[0, 4])
    assert kept == [0, 1, 2, 3, 4] and limits == {0: 5, 4: 19}  # the seconds go before the file name
    kept, limits = fit_columns(widths, least, 60, drop=[5], shorten=[0, 4])
    assert limits == {0: 5, 4: 9}  # never below a column's least, whatever is missing
    assert 3 not in limits and 1 not in limits  # the frame id and the outcome stay whole


def test_a_file_name_loses_its_extension_then_its_middle_never_its_line():
    assert shorten_where(Text("kakuma-0910.txt:3"), 20).plain == "kakuma-0910:3"
    short = shorten_where(Text(f"{LONG_FILE}:12"), 18).plain
    assert short.endswith(":12") and "…" in short and len(short) <= 18 and short.startswith("lodwar")
    assert shorten_where(Text("-"), 0).plain == "-"


@run_async
async def test_activity_at_80_columns_cuts_no_column_and_keeps_ids_and_line_numbers(sample_home):
    with Receiver(str(sample_home.db)) as r:
        r.ingest_many([("lod01-1", "H1|1|Lodwar1|WAT|15|88|#00", LONG_FILE, 12)], now=FIXED_NOW - 60,
                      source="cli")
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "5")
        feed, rejects = app.query_one("#feed-table", KeyedTable), app.query_one("#rejects-table", KeyedTable)
        await until(lambda: nothing_cut(feed) and nothing_cut(rejects), what="both tables inside 80 columns")
        # What is said elsewhere goes: the path (counted per path above), the line (Enter shows it).
        assert "source" not in feed.shown_columns and "text" not in rejects.shown_columns
        for table in (feed, rejects):
            assert shown(table, "frame_id") == whole(table, "frame_id")  # every id whole
            for short, full in zip(shown(table, "where"), whole(table, "where")):
                assert short.rpartition(":")[2] == full.rpartition(":")[2]  # every line number whole
        text = "\n".join(screen_lines(app))
        assert "lod01-1" in text and "ifo-0805-resend:" in text and ":12" in text
        assert "ifo-0805-resend." not in text  # the old cut, mid-name
        # The line left out is one key away, whole.
        rejects.focus()
        rejects.move_cursor(row=whole(rejects, "frame_id").index("lod01-1"))
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, RejectDialog))
        dialog_text = static_text(app.screen.query_one("#dialog-body", Static))
        assert "H1|1|Lodwar1|WAT|15|88|#00" in dialog_text and LONG_FILE in dialog_text


@run_async
async def test_activity_shows_every_column_whole_when_wide_enough(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await press_and_settle(pilot, "5")
        feed = app.query_one("#feed-table", KeyedTable)
        await until(lambda: "source" in feed.shown_columns and nothing_cut(feed))
        assert shown(feed, "where") == whole(feed, "where") and shown(feed, "ts") == whole(feed, "ts")


@run_async
async def test_quarantine_with_resolved_too_says_it_in_one_line_at_80_columns(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "3", "t")
        info = app.query_one("#quarantine-info", InfoLine)
        words = info.render().plain
        assert "resolved too" in words and "t: open only" in words
        assert cell_len(words) <= info.size.width, words
        await press_and_settle(pilot, "t")
        words = info.render().plain
        assert words.startswith("open conflicts") and cell_len(words) <= info.size.width, words


@run_async
async def test_the_ranking_keeps_its_rows_while_notifications_are_shown(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await press_and_settle(pilot, "2")
        table = app.query_one("#ranking-table", KeyedTable)
        bars = app.query_one("#ranking-bars")
        assert bars.display and table.row_count == 10
        story = "No receipt, so Kakuma re-sends the whole session: the first frame is a duplicate."
        for n in (1, 2):
            app.notify(story, title=f"Gateway {n}/10: kakuma-0800-b.txt", timeout=600, markup=False)
        # The notes take their band; the bars give way, and every row of the ranking stays in view.
        await until(lambda: not bars.display and table.size.height >= table.row_count + 1,
                    what="the ten rows in view beside the notes")
        assert all(f"{rank:>5}" in "\n".join(screen_lines(app)) for rank in range(1, 11))
        await press_and_settle(pilot, "d")
        await until(lambda: bars.display, what="the bars back once the notes are gone")
        assert all(b.size.height >= b.lines() for b in app.query(Bars))


# -- dialogs own the footer -------------------------------------------------------------------------
@run_async
async def test_a_dialog_shows_its_own_keys_in_the_footer_not_the_screens(sample_home):
    with_operator(sample_home)
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "3")
        await until(lambda: "k Keep first" in footer_words(app), what="the screen's keys first")
        dialog = await open_dialog(app, pilot, "3", "k", ResolveDialog)
        await until(lambda: "^s Sign" in footer_words(app))
        assert "esc Cancel" in footer_words(app) and not any("Keep first" in w for w in footer_words(app))
        await until(lambda: "Sign" in screen_lines(app)[-1], what="the dialog's keys on the bottom line")
        assert "Keep first" not in screen_lines(app)[-1]
        await pilot.press("escape")
        await until(lambda: app.screen is not dialog)
        for key, kind, words in (("e", ExportDialog, "Export"), ("question_mark", HelpScreen, "Close")):
            await pilot.press(key)
            await until(lambda: isinstance(app.screen, kind))
            await until(lambda: any(words in w for w in footer_words(app)))
            assert not any("Keep first" in w for w in footer_words(app))
            await pilot.press("escape")
            await until(lambda: not isinstance(app.screen, kind))


@run_async
async def test_the_footer_follows_each_screen_and_rebuilds_only_when_its_keys_change(sample_home):
    """Textual's footer rebuilt its dozen keys each time the bindings were looked at again, most
    often to the same keys: a layout of the whole screen each time. Ours rebuilds when they change."""
    from console.widgets.words_footer import WordsFooter

    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "1")
        await until(lambda: "⏎ History" in footer_words(app), what="the cases' keys")
        footer = app.screen.query_one(WordsFooter)
        builds = []
        rebuild = footer.recompose

        async def counted():
            builds.append(app.screen)
            await rebuild()
        footer.recompose = counted
        footer.bindings_changed(app.screen)  # the same keys as shown
        await pilot.pause()
        await pilot.pause()
        assert builds == []
        await press_and_settle(pilot, "3")
        await until(lambda: "k Keep first" in footer_words(app), what="the quarantine's keys")
        assert builds
        await press_and_settle(pilot, "1")
        await until(lambda: "⏎ History" in footer_words(app) and not any("Keep first" in w for w in footer_words(app)),
                    what="the cases' keys again")


@run_async
async def test_the_cases_footer_says_that_enter_opens_a_cases_history(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "1")
        await until(lambda: "⏎ History" in footer_words(app), what="Enter's history in the footer")
        # At 80 columns, with Quit still in view.
        await until(lambda: "⏎ History" in screen_lines(app)[-1] and "q Quit" in screen_lines(app)[-1],
                    what="Enter's history and Quit on the bottom line")
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, CaseScreen) and app.screen.story is not None)
        await until(lambda: any("Close" in w for w in footer_words(app)), what="the case screen's own footer")


def test_every_command_of_the_cli_is_an_action_of_the_console_or_said_why_not():
    done = {command for action in actions.ACTIONS for command in action.cli}
    assert set(COMMANDS) == done | set(actions.CLI_ONLY)
    assert not done & set(actions.CLI_ONLY)


@run_async
async def test_the_palette_finds_each_command_the_console_does_by_its_name(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot)
        for command in sorted({c for a in actions.ACTIONS for c in a.cli}):
            titles = " | ".join(await palette_titles(app, pilot, command))
            wanted = [a.palette_title for a in actions.ACTIONS if command in a.cli]
            assert any(title in titles for title in wanted), (command, titles)
        assert "backups" in actions.BY_ID["show_retention"].palette_title


# -- a stale error ----------------------------------------------------------------------------------
def result_text(dialog) -> str:
    return str(dialog.query_one("#sign-result", Static).render())


@run_async
async def test_a_reason_required_error_goes_when_the_reason_changes_not_before(sample_home):
    team(sample_home)  # alice and bob may resolve: nobody is chosen for the operator
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot, "3", "k", ResolveDialog)
        select = dialog.query_one("#operator", Select)
        await until(lambda: len(select._options) >= 3)
        await pilot.press("ctrl+s")
        await until(lambda: "Not signed: choose an operator" in result_text(dialog))
        select.value = "alice"  # the field it names changed: the error goes
        await until(lambda: "Not signed" not in result_text(dialog))
        await pilot.press("ctrl+s")
        await until(lambda: "Not signed: a reason is required" in result_text(dialog))
        select.value = "bob"  # another field: the error still says what is missing
        await pilot.pause()
        await until(lambda: dialog.query_one("#operator", Select).value == "bob")
        assert "a reason is required" in result_text(dialog)
        dialog.query_one("#reason", Input).focus()
        await pilot.press("x")
        await until(lambda: "Not signed" not in result_text(dialog), what="the stale error to clear")
        await pilot.press("ctrl+s")
        await until(lambda: "Not signed: give the passphrase" in result_text(dialog))
        dialog.query_one("#passphrase", Input).focus()
        await pilot.press("p")
        await until(lambda: "Not signed" not in result_text(dialog))


# -- feedback while it works --------------------------------------------------------------------------
@run_async
async def test_the_signing_dialog_says_it_is_unlocking_the_key_while_it_does(sample_home, monkeypatch):
    import console.dialogs.sign_form as sign_form

    with_operator(sample_home)
    entered, release = threading.Event(), threading.Event()
    real = sign_form.load_signer

    def slow_unlock(*args, **kwargs):  # the KDF's few seconds, held until the test has looked
        entered.set()
        release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(sign_form, "load_signer", slow_unlock)
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot, "3", "k", ResolveDialog)
        await until(lambda: dialog.query_one("#operator", Select).value == "alice")
        dialog.query_one("#reason", Input).value = "the first count was right"
        await until(lambda: dialog.preview is not None)
        dialog.query_one("#passphrase", Input).value = PASS
        await pilot.press("ctrl+s")
        try:
            await until(entered.is_set, what="the unlock to start")
            await until(lambda: "unlocking alice's key" in result_text(dialog), what="the unlocking words")
            assert "unlocking alice's key" in "\n".join(screen_lines(app))
        finally:
            release.set()
        await until(lambda: app.screen is not dialog, what="the signature")
        # The key is unlocked for the session now: the next one only signs.
        assert app.signing.operator == "alice"


def test_dates_read_one_way_only(utc):
    at = dt.datetime(2026, 12, 2, 10, 16, tzinfo=dt.timezone.utc).timestamp()
    assert stamp(at) == "2 Dec 10:16"
    assert short_stamp(at, at + 3600) == "10:16" and short_stamp(at, at + 3 * 86400) == "2 Dec"
    assert stamp(None) == "-"
    # Where a column is one cell short, a date with a two-digit day gives up its time, not its day.
    assert day_only(Text("23 Mar 09:30"), 11).plain == "23 Mar" and day_only(Text("2 Dec 10:16"), 11).plain == "2 Dec 10:16"


@run_async
async def test_the_consoles_tables_show_dates_with_the_months_name(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "5")
        whens = shown(app.query_one("#rejects-table", KeyedTable), "ts")
        assert whens and all(w.split()[1] in ("May",) for w in whens), whens
        await press_and_settle(pilot, "2")
        seen = shown(app.query_one("#ranking-table", KeyedTable), "first_seen")
        assert all(len(s.split()) == 3 and s.split()[1].isalpha() for s in seen), seen


@pytest.mark.parametrize("argv", [("rejects",), ("cases",), ("evictions",), ("case", "show", "kak01-1")])
def test_the_cli_listings_show_iso_dates_and_their_json_keeps_its_numbers(sample_home, argv):
    """The command line's one formatter (``render.when``) is ISO already: it stays so."""
    home = str(sample_home.root)
    human = run_cli("--home", home, *argv, env={"TZ": "UTC", "COLUMNS": "80"})
    assert human.returncode == 0, human.stderr
    import re

    assert not re.search(r"(?<![\d-])\d\d-\d\d \d\d:\d\d", human.stdout), human.stdout  # never "12-02 10:16"
    assert re.search(r"20\d\d-\d\d-\d\d", human.stdout), human.stdout  # ISO: the year first
    as_json = run_cli("--home", home, *argv, "--json", env={"TZ": "UTC"})
    assert as_json.returncode == 0 and "May" not in as_json.stdout
