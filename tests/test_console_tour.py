"""What a newcomer's tour at 80x24 hit, each seen on the screen as drawn (also without colour).

Each test drives the console by its keys and reads the rendered screen, not only the widgets'
state: a choice must be a mark one can read, a newest row must be on screen, a notification must
leave the focused table in view.
"""

from __future__ import annotations


from core import Receiver
from tests.support.console_support import fixed_app, press_and_settle, run_async, until
from tests.support.helpers import frame
from tests.support.console_pilot import screen_lines, screen_text, screen_words

SIZE = (80, 24)


# -- the export dialog: a mark says the choice; Enter exports, Escape cancels -----------------------------------
async def open_export(app, pilot, panel_key: str):
    from console.dialogs.export_dialog import ExportDialog

    await press_and_settle(pilot, panel_key, "e")
    await until(lambda: isinstance(app.screen, ExportDialog))
    await pilot.pause()
    await until(lambda: "(•) CSV" in screen_text(app))


def test_the_export_choice_is_a_mark_and_enter_exports_the_chosen_format(sample_home, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")  # the mark must hold without colour

    @run_async
    async def run():
        app = fixed_app(sample_home)
        async with app.run_test(size=SIZE) as pilot:
            await open_export(app, pilot, "2")
            shown = screen_text(app)
            assert "(•) ranking" in shown and "( ) cases" in shown and "( ) XLSX" in shown
            await pilot.press("tab", "down")  # view list -> format list; down chooses
            await until(lambda: "(•) XLSX" in screen_text(app))
            assert "( ) CSV" in screen_text(app)
            await pilot.press("space")  # Space on a list chooses; it never cancels
            assert app.screen.__class__.__name__ == "ExportDialog"
            await pilot.press("enter")
            await until(lambda: list(sample_home.exports.glob("dispatch-*.xlsx")))
            assert not list(sample_home.exports.glob("*.csv"))

    run()


@run_async
async def test_the_dialog_opens_on_the_view_list_so_down_then_enter_exports_the_next_view(sample_home):
    """As the hint says: arrows choose at once, no Tab first (Down on the Export button did nothing,
    and Enter wrote the view the dialog opened on)."""
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await open_export(app, pilot, "1")  # opens on cases; the next view down is the ranking
        assert app.focused is app.screen.query_one("#export-view")
        await pilot.press("down", "enter")
        await until(lambda: list(sample_home.exports.glob("dispatch-*.csv")))
        assert not list(sample_home.exports.glob("cases-*"))


@run_async
async def test_an_arrow_moves_on_from_the_choice_wherever_the_cursor_was_drawn(sample_home):
    """Before the dialog's first refresh the cursor sits on the first line, not on the choice: a
    Tab, Down typed that fast (a quick operator, a loaded machine) only moved the cursor, or chose
    the line after the cursor. The arrow keys are the set's own and start from the choice."""
    from console.dialogs.export_dialog import ChoiceSet
    from console.export_views import VIEWS

    names = list(VIEWS)
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await open_export(app, pilot, "2")  # opens on the ranking, not the first view
        views = app.screen.query_one("#export-view", ChoiceSet)
        assert views.chosen == "ranking" and names.index("ranking") > 0
        views._selected = 0  # where RadioSet's own mount leaves the cursor
        await pilot.press("down")
        assert views.chosen == names[names.index("ranking") + 1]
        views._selected = 0
        await pilot.press("up")
        assert views.chosen == "ranking"


@run_async
async def test_every_view_is_named_whole_in_the_dialog_at_80x24(sample_home):
    from console.export_views import VIEWS

    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await open_export(app, pilot, "1")
        shown = screen_text(app)
        for name, view in VIEWS.items():
            assert f"{name}: {view.title}" in shown, name  # not cut off with an ellipsis


@run_async
async def test_tab_never_lands_on_cancel_and_escape_cancels_with_a_word(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await open_export(app, pilot, "2")
        focused = set()
        for _ in range(6):
            await pilot.press("tab")
            focused.add(app.focused.id)
        assert focused == {"export", "export-view", "export-format"}
        await pilot.press("space")  # on whatever has focus: never a silent cancel
        assert app.screen.__class__.__name__ == "ExportDialog"
        await pilot.press("escape")
        await until(lambda: app.screen.__class__.__name__ != "ExportDialog")
        await until(lambda: "Export cancelled" in screen_text(app))
        assert not sample_home.exports.exists() or not list(sample_home.exports.iterdir())


# -- Activity: the feed follows the newest row unless the operator moved away ---------------------------------------
def add_frames(home, first: int, n: int) -> list[str]:
    ids = [f"new{first + i:02d}-1" for i in range(n)]
    with Receiver(str(home.db)) as r:
        r.ingest_many([(fid, frame(first + i, "Newsite", "WAT", 2, 1), "late.txt", i + 1)
                       for i, fid in enumerate(ids)], source="cli")
    return ids


@run_async
async def test_the_live_feed_shows_new_rows_at_the_top_unless_the_operator_scrolled(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "5")
        feed = app.query_one("#feed-table")
        assert app.focused is feed and feed.cursor_row == 0
        ids = add_frames(sample_home, 1, 4)
        await press_and_settle(pilot, "ctrl+r")
        await until(lambda: feed.row_keys and str(feed.get_cell_at((0, 3))) == ids[-1])
        await pilot.pause()
        await until(lambda: round(feed.scroll_y) == 0)
        assert feed.cursor_row == 0
        shown = screen_text(app)
        assert all(fid in shown for fid in ids), shown  # every new row on screen, none above the top

        # Moved down to read: the row stays where the operator put it, new rows do not pull it away.
        await pilot.press("down", "down")
        reading = feed.cursor_key
        add_frames(sample_home, 10, 3)
        await press_and_settle(pilot, "ctrl+r")
        await until(lambda: feed.cursor_key == reading and feed.cursor_row == 2 + 3)
        await pilot.press("up", "up", "up", "up", "up")  # back to the top: following again
        add_frames(sample_home, 20, 2)
        await press_and_settle(pilot, "ctrl+r")
        await until(lambda: str(feed.get_cell_at((0, 3))) == "new21-1" and feed.cursor_row == 0)


@run_async
async def test_the_feed_maximized_at_80_columns_shows_the_whole_reason(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "5", "m")
        await until(lambda: app.screen.maximized is not None, what="the feed maximized")
        await pilot.pause()
        shown = screen_text(app)
        assert "reason" in shown.splitlines()[0]
        feed = app.query_one("#feed-table")
        visible = feed.scrollable_content_region.height - 1  # under the header row, above a scrollbar
        reasons = [str(feed.get_cell_at((row, 2))) for row in range(min(visible, feed.row_count))]
        assert len(set(reasons)) >= 4
        for row, words in enumerate(reasons, start=1):
            assert words in shown.splitlines()[row], (row, words)  # whole, on its own row


# -- notifications take a band of their own: never drawn over the focused table or the help text -------------------
LONG_NOTE = ("kak01-1: H1|1|Kakuma|WAT|9|2|#ab differs from H1|1|Kakuma|WAT|3|2|#cd. "
             "Held for review; press 3 (d hides notes).")


def visible_region(app, widget):
    """Where ``widget`` is drawn on the screen: its region cut by every container that clips it."""
    geometry = app.screen.find_widget(widget)
    return geometry.region.intersection(geometry.clip)


def drawn(app, widgets) -> list:
    """The visible regions of those of ``widgets`` that are drawn at all (a note scrolled away is not)."""
    from textual.errors import NoWidget

    out = []
    for widget in widgets:
        try:
            region = visible_region(app, widget)
        except NoWidget:
            continue
        if region.height:
            out.append(region)
    return out


async def three_notes(app, pilot) -> list:
    from textual.widgets._toast import Toast

    for n in range(3):
        app.notify(LONG_NOTE, title=f"! Conflict held {n}", severity="warning", timeout=60, markup=False)
    await until(lambda: len(app.screen.query(Toast)) == 3 and all(t.region.height for t in app.screen.query(Toast)))
    await pilot.pause()
    return list(app.screen.query(Toast))


def test_notifications_never_cover_the_focused_table_or_the_help_text(sample_home, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")

    @run_async
    async def run():
        app = fixed_app(sample_home)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            for key in ("1", "2", "3", "4", "5"):
                await press_and_settle(pilot, key)
                toasts = await three_notes(app, pilot)
                assert app.focused is not None, key
                shown = visible_region(app, app.focused)
                assert shown.height >= 3, key  # a header and rows, whole
                notes = drawn(app, toasts)
                assert notes and not any(note.overlaps(shown) for note in notes), (key, notes, shown)
                await until(lambda: "! Conflict held 2" in screen_text(app))  # the newest is in view
                app.clear_notifications()
                await until(lambda: not app.screen.query("Toast"))
            await press_and_settle(pilot, "question_mark")
            toasts = await three_notes(app, pilot)
            help_text = visible_region(app, app.screen.query_one("VerticalScroll"))
            notes = drawn(app, toasts)
            assert help_text.height >= 5 and notes and not any(note.overlaps(help_text) for note in notes)

    run()


# -- signing dialogs at 80x24: the focus is a mark, the preview scrolls, the Sign button stays in view ---------------
def with_operators(home, *names):
    from tests.support.console_pilot import operators

    operators(home, *names)


async def open_signing(app, pilot, panel_key: str, key: str, cls):
    await press_and_settle(pilot, panel_key, key)
    await until(lambda: isinstance(app.screen, cls))
    await pilot.pause()
    return app.screen


def marked(app) -> list[str]:
    """The screen rows that carry the focus mark."""
    return [line for line in screen_lines(app) if "▶" in line]


def test_the_focused_field_carries_a_mark_without_colour(sample_home, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    from console.dialogs.resolve_dialog import ResolveDialog

    with_operators(sample_home, "alice")

    @run_async
    async def run():
        app = fixed_app(sample_home)
        async with app.run_test(size=SIZE) as pilot:
            await open_signing(app, pilot, "3", "k", ResolveDialog)
            await until(lambda: len(marked(app)) == 1 and "▶ Reason" in marked(app)[0])
            await pilot.press("tab")  # the preview, which can be scrolled
            await until(lambda: len(marked(app)) == 1 and "▶ what will be signed" in marked(app)[0])
            await pilot.press("tab")
            await until(lambda: len(marked(app)) == 1 and "▶ Passphrase" in marked(app)[0])
            await pilot.press("shift+tab", "shift+tab")
            await until(lambda: len(marked(app)) == 1 and "▶ Reason" in marked(app)[0])
            assert reversed_labels(app.screen) == ["▶ Reason"]  # the operator row is not lit as well

    run()


def reversed_labels(dialog) -> list[str]:
    """The field labels drawn reversed: only the focused field's, under NO_COLOR too."""
    return [str(label.content) for label in dialog.query(".field Label") if "reverse" in str(label.styles.text_style)]


@run_async
async def test_a_long_preview_scrolls_and_the_sign_button_stays_on_screen(sample_home):
    from textual.widgets import Button, Input

    from console.dialogs.exception_dialog import ExceptionDialog
    from console.dialogs.resolve_dialog import ResolveDialog

    with_operators(sample_home, "alice")
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_signing(app, pilot, "3", "k", ResolveDialog)
        await pilot.press(*"site confirmed")
        await until(lambda: dialog.preview is not None)
        box = dialog.query_one("#preview-box")
        await until(lambda: box.max_scroll_y > 0)  # longer than its rows at 80x24: it scrolls, it is not cut
        assert box.show_vertical_scrollbar
        box.focus()
        await pilot.press("end")
        await until(lambda: round(box.scroll_y) == box.max_scroll_y)
        await until(lambda: "reason: site confirmed" in screen_text(app))  # the last line, reached
        assert visible_region(app, dialog.query_one("#sign", Button)).height == 1
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, ResolveDialog))

        dialog = await open_signing(app, pilot, "4", "x", ExceptionDialog)
        dialog.query_one("#days", Input).value = "10"
        dialog.query_one("#reason", Input).value = "disk nearly full"
        await until(lambda: dialog.preview is not None)
        dialog.query_one("#passphrase", Input).value = "wrong passphrase"
        await pilot.press("ctrl+s")
        await until(lambda: "Not signed" in screen_text(app))
        for widget in ("#sign", "#cancel"):  # after the error too, both in view
            assert visible_region(app, dialog.query_one(widget, Button)).height == 1, widget
        assert "Sign the change (ctrl+s)" in screen_text(app)


# -- Cases: the filter applies as you type; at 80 columns a disputed row keeps every column whole -------------------
@run_async
async def test_the_cases_filter_applies_as_you_type(sample_home):
    app = fixed_app(sample_home)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "1", "slash")
        table = app.query_one("#cases-table")
        assert len(table.row_keys) == 10
        await pilot.press(*"Ifo")  # no Enter
        await until(lambda: len(table.row_keys) == 3)
        assert all(str(table.get_cell(key, "site")) == "Ifo2" for key in table.row_keys)
        assert "cases 1-3 of 3" in screen_text(app)
        await pilot.press("backspace", "backspace", "backspace")
        await until(lambda: len(table.row_keys) == 10)


def test_a_disputed_row_keeps_ver_and_path_whole_at_80_columns(sample_home, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    from tools.sample_store import add_lifecycle

    add_lifecycle(sample_home)  # kak01-1 is dispatched while its correction waits: the widest status

    @run_async
    async def run():
        app = fixed_app(sample_home)
        async with app.run_test(size=SIZE) as pilot:
            await press_and_settle(pilot, "1")
            table = app.query_one("#cases-table")
            lines = screen_lines(app)
            header = next(line for line in lines if "frame id" in line)
            assert header.split() == ["frame", "id", "site", "need", "people", "pri", "status", "seen", "ver",
                                      "path"]
            row = next(line for line in lines if "kak01-1" in line)
            assert "dispatched ! DISPUTED" in row
            case = next(c for c in table.row_keys if str(table.get_cell(c, "frame_id")) == "kak01-1")
            ver, path = str(table.get_cell(case, "version")), str(table.get_cell(case, "source"))
            assert row.split()[-2:] == [ver, path], row  # the last two columns, whole
            assert table.virtual_size.width <= table.scrollable_content_region.width  # nothing to scroll sideways

    run()


# -- words that say what is true: who takes the inbox ------------------------------------------------------------
def header_text(app) -> str:
    return "\n".join(screen_lines(app)[:2])


def test_with_watch_running_the_header_and_the_quit_dialog_say_watch_takes_the_inbox(home, utc, watcher):
    import functools

    from console.app import inbox_service
    from console.dialogs.confirm_dialog import ConfirmDialog
    from tests.support.console_pilot import FAST

    w = watcher()  # a real `ussd-console watch` on this home

    @run_async
    async def run():
        # As `serve` runs its sessions (--no-inbox): the header names who takes the inbox.
        app = fixed_app(home)
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: "watch takes the inbox" in header_text(app), what="the header to see watch")
            assert "inbox off" not in header_text(app)

        # A console with its own inbox: quitting says watch goes on taking the files.
        app = fixed_app(home, service_factory=functools.partial(inbox_service, config=FAST))
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.service is not None)
            await pilot.press("q")
            await until(lambda: isinstance(app.screen, ConfirmDialog))
            await until(lambda: "takes new files from now on" in screen_words(app))
            shown = screen_words(app)
            assert f"pid {w.proc.pid}" in shown and "until" not in shown
            await pilot.press("n")

    run()


@run_async
async def test_without_watch_quitting_says_files_wait(home, utc):
    import functools

    from console.app import inbox_service
    from console.dialogs.confirm_dialog import ConfirmDialog
    from tests.support.console_pilot import FAST

    app = fixed_app(home, service_factory=functools.partial(inbox_service, config=FAST))
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: app.service is not None)
        await pilot.press("q")
        await until(lambda: isinstance(app.screen, ConfirmDialog))
        await until(lambda: "nothing else takes it" in screen_words(app))
        await pilot.press("n")
