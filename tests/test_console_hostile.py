"""What reaches the operator's screen: never a control sequence from outside; faults are told."""

from __future__ import annotations

import re
import sqlite3

from console.widgets.header_bar import HeaderBar
from core import Receiver
from core.inbox.faults import delivery_fault
from tests.support.console_support import HOME_LABEL, fixed_app, notes_on_screen, press_and_settle, run_async, until
from tests.support.helpers import frame

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
HOSTILE = [
    ("[link=http://evil]x[/link]", "H1|1|A|MED|1|1|#00", "[bold]bell\x07.txt", 1),
    ("ok-1", "H1|1|A|MED|1|1|\x1b]0;owned\x07", "clear\x1b[2J.csv", 2),
    ("nul\x00id", "H1|1|A|MED|1|1|\x9b31m", "c1\x9bfile.txt", 3),
    ("fine-1", frame(1, "Hostile", "MED", 4, 50), "title\x1b]2;pwned\x07.txt", 4),
]


def screen_text(app) -> str:
    """The whole rendered screen, as the terminal would get it (Textual's own export)."""
    return app.export_screenshot()


@run_async
async def test_no_control_character_from_input_reaches_the_screen(sample_home):
    with Receiver(str(sample_home.db)) as r:
        r.ingest_many(HOSTILE, source="cli")
    app = fixed_app(sample_home)
    async with app.run_test(size=(120, 36)) as pilot:
        for key in ("1", "2", "3", "4", "5"):
            await press_and_settle(pilot, key)
            shown = screen_text(app)
            assert not CONTROL.search(shown.replace("\n", "").replace("\t", "")), key
        await press_and_settle(pilot, "5")
        shown = screen_text(app)
        assert "[link=http://evil]x[/link]" in shown.replace("&#160;", " ")  # shown literally, not as a link
        assert "\\x1b" in shown  # the escape is visible as text


class FlakyService:
    """An inbox whose store fails, then recovers: only its health matters here."""

    def __init__(self, *_args, **_kwargs):
        self.fault = None

    def start(self):
        pass

    def stop(self, timeout=None):
        return True

    def health(self):
        return {"observer": "running", "sweep": "running", "last_sweep": None, "files_waiting": 2 if self.fault else 0,
                "claims_won": {}, "claims_lost": 0, "last_error": self.fault, "state": "fault" if self.fault else "ok"}


@run_async
async def test_an_inbox_fault_is_told_and_so_is_its_recovery(sample_home):
    service = FlakyService()
    app = fixed_app(sample_home, service_factory=lambda home, cb: service)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await press_and_settle(pilot, "1")
        service.fault = delivery_fault(sqlite3.OperationalError("database or disk is full"), "/x", "x.txt", "here")[1]
        await press_and_settle(pilot, "ctrl+r")
        await until(lambda: any("disk is full" in n for n in notes_on_screen(app)))
        assert "inbox error" in screen_text(app).replace("&#160;", " ")
        (note,) = [" ".join(n.split()).lower() for n in notes_on_screen(app) if "disk is full" in n]
        assert note.count("files wait in the inbox") == 1, note  # the fault's own words and the note's, said once
        header = app.query_one(HeaderBar).render().plain.splitlines()[0]
        assert HOME_LABEL in header and "2 files waiting" in header  # the home is not squeezed to a letter
        service.fault = None
        await press_and_settle(pilot, "ctrl+r")
        await until(lambda: any("cleared" in n for n in notes_on_screen(app)))
