"""The operator's first hour in the console at 80x24, through Pilot."""

from __future__ import annotations

from textual.command import SearchIcon
from textual.widgets import Input, Select, Static

from console.dialogs.confirm_dialog import ConfirmDialog
from console.dialogs.exception_dialog import ExceptionDialog
from console.dialogs.reject_dialog import RejectDialog
from console.dialogs.resolve_dialog import ResolveDialog
from console.widgets.header_bar import HeaderBar
from console.widgets.keyed_table import KeyedTable
from console.widgets.palette import PlainPalette
from core import Receiver
from core.store.records import Conflict
from tests.support.console_support import fixed_app, notes_on_screen, press_and_settle, run_async, until
from tests.support.console_pilot import IdleInbox, open_dialog, operators
from tests.support.signing import PASS

SIZE = (80, 24)


def on_screen(app, widget) -> bool:
    """The widget is drawn inside the terminal, not below its edge."""
    region = widget.region
    return region.height > 0 and region.y >= 0 and region.bottom <= app.size.height


# -- 3. q asks before the console stops taking in the inbox ----------------------------------------
@run_async
async def test_q_asks_before_quitting_a_console_that_takes_in_the_inbox(sample_home):
    app = fixed_app(sample_home, service_factory=IdleInbox, quit_note="The demo home is then removed.")
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot)
        await pilot.press("q")
        await until(lambda: isinstance(app.screen, ConfirmDialog))
        body = str(app.screen.query_one("#dialog-body", Static).render())
        assert "stops taking in the inbox" in body and "The demo home is then removed." in body
        await pilot.press("n")
        await until(lambda: not isinstance(app.screen, ConfirmDialog))
        assert app.is_running
        await pilot.press("q")
        await until(lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.press("y")
        await until(lambda: not app.is_running)


@run_async
async def test_q_quits_at_once_a_console_without_the_inbox(sample_home):
    app = fixed_app(sample_home)  # service_factory=None: nothing stops
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot)
        await pilot.press("q")
        await until(lambda: not app.is_running)


# -- 4. notifications give way ------------------------------------------------------------------------
@run_async
async def test_d_hides_every_notification_and_conflict_notes_are_short(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await press_and_settle(pilot)
        app.notify("first", timeout=60)
        app.notify("second", timeout=60)
        await until(lambda: len(notes_on_screen(app)) == 2)
        await pilot.press("d")
        await until(lambda: len(notes_on_screen(app)) == 0)
        app.notices.conflicts([Conflict(id=99, frame_id="x-1", case_key="rec:x", frame_text="a", first_frame_id="x-1",
                                        first_text="b", reason="same_frame_id_different_payload", first_seen=0.0,
                                        last_seen=0.0, seen_count=1, source="cli", status="open",
                                        resolved_at=None, resolved_by=None)], 2)
        await until(lambda: len(notes_on_screen(app)) == 1)
        [note] = notes_on_screen(app)
        assert "d hides" in note


# -- 5 and 6. signing dialogs at 80x24 ------------------------------------------------------------------


@run_async
async def test_signing_focuses_the_reason_and_typing_goes_there(sample_home):
    operators(sample_home, "alice")
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot, "3", "k", ResolveDialog)
        await until(lambda: dialog.query_one("#operator", Select).value == "alice")  # the only one, preselected
        assert app.focused is dialog.query_one("#reason", Input)
        await pilot.press(*"site confirmed")
        assert dialog.query_one("#reason", Input).value == "site confirmed"
        assert not dialog.query_one("#operator", Select).expanded


@run_async
async def test_signing_never_preselects_the_operator_who_signed_last(sample_home, tmp_path):
    operators(sample_home, "alice", "bob")
    pf = tmp_path / "pf"
    pf.write_text(PASS + "\n")
    from core.signing import actions, signed_action

    with Receiver(str(sample_home.db)) as r:
        signed_action.sign(sample_home, r, actions.RETENTION, {"days": 45},
                           operator="bob", passphrase=PASS, reason="a longer policy")
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot, "3", "k", ResolveDialog)
        select = dialog.query_one("#operator", Select)
        await pilot.press("shift+tab", "enter")  # open the list: both are offered once it is loaded
        await until(lambda: "bob" in app.export_screenshot() and "alice" in app.export_screenshot())
        assert select.value is Select.NULL  # the operator at the keyboard chooses; nobody is guessed
        await pilot.press("escape")
        assert select.value is Select.NULL


@run_async
async def test_retention_dialog_error_is_in_sight_at_80x24_and_the_fields_stay(sample_home):
    operators(sample_home, "alice")
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot, "4", "x", ExceptionDialog)
        assert app.focused is dialog.query_one("#days", Input)
        await until(lambda: dialog.query_one("#operator", Select).value == "alice")
        dialog.query_one("#days", Input).value = "10"
        dialog.query_one("#reason", Input).value = "disk nearly full"
        await until(lambda: dialog.preview is not None)
        dialog.query_one("#passphrase", Input).value = "wrong passphrase"
        await pilot.press("ctrl+s")
        result = dialog.query_one("#sign-result", Static)
        await until(lambda: "wrong passphrase" in str(result.render()))
        await pilot.pause()
        assert on_screen(app, result), result.region
        assert dialog.query_one("#days", Input).value == "10"
        assert dialog.query_one("#reason", Input).value == "disk nearly full"
        assert dialog.query_one("#operator", Select).value == "alice"
        assert app.focused is dialog.query_one("#passphrase", Input)


# -- 7. the header's alert at 80 columns, whatever the totals ---------------------------------------------
@run_async
async def test_the_conflict_badge_stays_readable_with_huge_totals(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot)
        header = app.query_one(HeaderBar)
        huge = app.totals._replace(cases=123_456_789, headcount_total=9_876_543_210, duplicates=555_555_555,
                                   rejects=44_444_444, conflicts_open=12_345)
        header.show(huge, None, False)
        lines = header.render().plain.splitlines()
        assert "! 12,345 CONFLICTS OPEN" in lines[1] and len(lines[1]) <= 80


# -- 8 and "Explain a reject": Activity at 80x24 ------------------------------------------------------------
@run_async
async def test_activity_at_80x24_shows_whole_file_lines_and_explains_a_reject(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "5")
        feed = app.query_one("#feed-table", KeyedTable)
        assert feed.region.height >= 6  # header plus at least five rows of the feed
        rejects = app.query_one("#rejects-table", KeyedTable)
        whys = [str(rejects.get_cell(key, "why")) for key in rejects.row_keys]
        assert any(w.startswith("checksum says #") and "frame says #00" in w for w in whys)
        assert "expected 7 fields, got 5" in whys
        wheres = [str(rejects.get_cell(key, "where")) for key in rejects.row_keys]
        assert all(":" in w for w in wheres)  # file:line, the line number whole
        rejects.focus()
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, RejectDialog))
        from rich.console import Console

        from console.dialogs.reject_dialog import reject_details

        shown = Console(width=76, record=True, file=open("/dev/null", "w"))
        shown.print(reject_details(app.screen.row))
        body = shown.export_text()
        assert "What was wrong" in body and app.screen.row.file.rsplit("/", 1)[-1] in body and "The line" in body
        assert app.screen.row.frame_text in body  # the whole line
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, RejectDialog))


# -- 9. the palette's icon is plain ASCII ----------------------------------------------------------------------
@run_async
async def test_the_command_palette_has_no_emoji(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot)
        await pilot.press("ctrl+p")
        await until(lambda: isinstance(app.screen, PlainPalette))
        await pilot.pause()
        icon = app.screen.query_one(SearchIcon).icon
        assert icon.isascii() and icon == ">"


# -- 15. the evict confirmation says when it was cancelled ----------------------------------------------------
@run_async
async def test_a_cancelled_eviction_says_so(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await press_and_settle(pilot, "4")
        await pilot.press("e")
        await until(lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.press("n")
        await until(lambda: any("cancelled" in n for n in notes_on_screen(app)))
