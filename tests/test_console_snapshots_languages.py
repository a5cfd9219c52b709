"""Pictures of the console's screens and the signing dialog at 80x24 in each shipped language, on
the sample store with a fixed clock: the longer words cut no label, key hint or column header.

Update after a deliberate change with ``pytest tests/test_console_snapshots_languages.py
--snapshot-update`` and look at each picture before committing.
"""

from __future__ import annotations

import pytest

from core import i18n
from tests.support.console_support import fixed_app, press_and_settle, until

LANGS = ("es", "fr", "pt", "sw")
SCREENS = {"cases": ("1",), "ranking": ("2",), "quarantine": ("3",), "retention": ("4",), "activity": ("5",),
           "help": ("question_mark",), "history": ("1", "enter"), "overview": ("o",)}


@pytest.mark.parametrize("screen", list(SCREENS))
@pytest.mark.parametrize("lang", LANGS)
def test_screen(snap_compare, sample_home, lang, screen):
    i18n.select(lang)
    app = fixed_app(sample_home)

    async def run_before(pilot):
        await press_and_settle(pilot, *SCREENS[screen])

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("lang", LANGS)
def test_signing_dialog(snap_compare, sample_home, lang):
    """Resolving a conflict, the reason typed: the title, fields, preview frame, buttons and footer."""
    from console.dialogs.resolve_dialog import ResolveDialog
    from textual.widgets import Input
    from tests.support.console_pilot import with_operator

    with_operator(sample_home)
    i18n.select(lang)
    app = fixed_app(sample_home)

    async def run_before(pilot):
        await press_and_settle(pilot, "3", "k")
        await until(lambda: isinstance(app.screen, ResolveDialog))
        dialog = app.screen
        await until(lambda: dialog.query_one("#operator").value == "alice")
        dialog.query_one("#reason", Input).value = "count checked by radio"
        await until(lambda: dialog.preview is not None)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
