"""Console tests' tools: read a table or a Static, open and sign a dialog, an operator or two, an app
over a live inbox, an inbox that only says it runs."""

from __future__ import annotations

import functools
import io

from rich.console import Console
from textual.command import CommandInput, CommandList
from textual.widgets import Input, Static
from textual.widgets.select import InvalidSelectValueError

from console.app import ConsoleApp, inbox_service
from console.widgets.keyed_table import KeyedTable
from console.widgets.palette import PlainPalette
from core import Receiver
from core.config import InboxConfig
from core.signing.operator_add import add_operator
from core.signing.operators import load_signer
from core.signing.roles import RESOLVER, ROLES
from tests.support.console_support import HOME_LABEL, press_and_settle, until
from tests.support.signing import PASS, PASSPHRASES



def cells(app, table_id: str, column: str) -> list[str]:
    """A column's cells as the table holds them (a column left out at a narrow width too)."""
    t = app.query_one(f"#{table_id}", KeyedTable)
    return [str(getattr(v, "plain", v)) for v in t.values(column)]


def static_text(widget: Static) -> str:
    """What a Static shows, as plain text (its content may be a Rich table)."""
    out = Console(width=200, record=True, file=io.StringIO())
    out.print(widget.content)
    return out.export_text()


def with_operator(home):
    with Receiver(str(home.db)) as r:
        add_operator(home, r, "alice", PASS)
        open_item = r.quarantine(status="open")[0]
        return open_item


async def open_dialog(app, pilot, screen: str, key: str, kind):
    await press_and_settle(pilot, screen)
    await pilot.press(key)
    await until(lambda: isinstance(app.screen, kind))
    return app.screen


async def fill_and_sign(app, pilot, reason: str, passphrase: str, operator: str = "alice", **extra: str):
    """Fill the open signing dialog as an operator would; with several who may sign, nobody is
    chosen for them, so ``operator`` is picked from the list once it is loaded."""
    dialog = app.screen
    select = dialog.query_one("#operator")

    def chosen() -> bool:
        try:
            select.value = operator
        except InvalidSelectValueError:  # the list is not loaded yet
            return False
        return True
    await until(chosen, what=f"{operator} in the operator list")
    for field, value in extra.items():
        dialog.query_one(f"#{field}", Input).value = value
    dialog.query_one("#reason", Input).value = reason
    await until(lambda: dialog.preview is not None)
    dialog.query_one("#passphrase", Input).value = passphrase
    await pilot.press("ctrl+s")
    return dialog


class IdleInbox:
    """Stands for the inbox service: the console is taking files in while it runs."""

    def __init__(self, home, on_verdicts):
        pass

    def start(self):
        pass

    def stop(self, timeout=None):
        return True

    def health(self):
        return {"observer": "running", "sweep": "running"}


def operators(home, *names):
    """The first name signs its own entry; the others are approved by it."""
    with Receiver(str(home.db)) as r:
        for i, name in enumerate(names):
            sponsor = load_signer(home, r, names[0], PASS) if i else None
            add_operator(home, r, name, PASS, sponsor=sponsor, roles=None if sponsor is None else list(ROLES))


FAST = InboxConfig(sweep_interval=0.5, settle_time=0.2)


def live_app(home, **kwargs) -> ConsoleApp:
    kwargs.setdefault("service_factory", functools.partial(inbox_service, config=FAST))
    kwargs.setdefault("evict_every", None)
    kwargs.setdefault("home_label", HOME_LABEL)
    return ConsoleApp(home, **kwargs)


async def palette_titles(app, pilot, query: str) -> list[str]:
    await pilot.press("ctrl+p")
    await until(lambda: isinstance(app.screen, PlainPalette))
    palette = app.screen
    # The query as one change of the field, as a paste: a search per letter typed re-rendered the
    # list (and the screen under it) once a letter, for titles read only after the last.
    palette.query_one(CommandInput).value = query
    options = palette.query_one(CommandList)
    await until(lambda: options.option_count > 0)
    await pilot.pause()
    titles = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
    await pilot.press("escape")
    await until(lambda: not isinstance(app.screen, PlainPalette))
    return titles


def team(home):
    with Receiver(str(home.db)) as r:
        add_operator(home, r, "alice", PASS)
        alice = load_signer(home, r, "alice", PASS)
        add_operator(home, r, "bob", PASSPHRASES["bob"], sponsor=alice, roles=[RESOLVER])


def screen_lines(app) -> list[str]:
    """The active screen as the terminal shows it, one string per row (no styles)."""
    return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]


def screen_text(app) -> str:
    return "\n".join(screen_lines(app))


def screen_words(app) -> str:
    """The screen's words as one line: borders and line ends gone, so a wrapped sentence reads whole."""
    import re

    return " ".join(re.sub(r"[█▀▄▔▁│╭╮╰╯─═║╔╗╚╝▌▐]", " ", screen_text(app)).split())
