"""Carrying a case to done in the console (Pilot): two marks from the Ranking screen in one
unlocked signing session, a case's history on Enter from every case screen, the disputed
and dispatched words, the lock key and the idle lock, resolved conflicts listed, a conflict
compared with the case as the ledger holds it after a correction."""

from __future__ import annotations

import io

from rich.console import Console
from textual.widgets import Input, Static

import console.dialogs.sign_form as sign_form
from console.dialogs.case_screen import CaseScreen
from console.dialogs.mark_dialog import MarkDialog
from console.widgets.header_bar import HeaderBar
from console.widgets.keyed_table import KeyedTable
from core import Receiver
from core.signing import audit
from core.signing import signed_action
from core.signing.actions import resolution
from core.signing.operator_add import add_operator
from tests.support.console_support import fixed_app, press_and_settle, run_async, until
from tools.sample_store import add_lifecycle
from tests.support.helpers import frame
from tests.support.signing import PASS


def with_alice(home) -> None:
    with Receiver(str(home.db)) as r:
        add_operator(home, r, "alice", PASS)


def shown(widget: Static) -> str:
    """What a Static holds, as plain text."""
    out = Console(width=120, record=True, file=io.StringIO())
    out.print(widget.content)
    return out.export_text()


def statuses(home) -> dict[str, str]:
    with Receiver(str(home.db)) as r:
        return {c.frame_id: c.status for c in r.cases(limit=100)}


def cell_texts(app, table_id: str, column: str) -> list[str]:
    table = app.query_one(f"#{table_id}", KeyedTable)
    return [str(table.get_cell(key, column)) for key in table.row_keys]


async def select_row(app, pilot, table_id: str, frame_id: str) -> None:
    table = app.query_one(f"#{table_id}", KeyedTable)
    ids = cell_texts(app, table_id, "frame_id")
    table.move_cursor(row=ids.index(frame_id))
    await pilot.pause()


async def sign_mark(app, pilot, key: str, reason: str, passphrase: str | None):
    await pilot.press(key)
    await until(lambda: isinstance(app.screen, MarkDialog))
    dialog = app.screen
    await until(lambda: dialog.query_one("#operator").value == "alice")
    dialog.query_one("#reason", Input).value = reason
    await until(lambda: dialog.preview is not None and dialog.preview.reason == reason)
    box = dialog.query_one("#passphrase", Input)
    if passphrase is None:
        assert box.disabled and "unlocked" in box.placeholder  # nothing to type: the key is unlocked
    else:
        assert not box.disabled
        box.value = passphrase
    await pilot.press("ctrl+s")
    await until(lambda: app.screen is not dialog)
    await press_and_settle(pilot)


@run_async
async def test_two_marks_from_the_ranking_with_one_unlock(sample_home, monkeypatch):
    with_alice(sample_home)
    unlocks = []
    real = sign_form.load_signer

    def counting(*args, **kwargs):
        unlocks.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(sign_form, "load_signer", counting)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "2")
        await select_row(app, pilot, "ranking-table", "kak01-1")
        await sign_mark(app, pilot, "D", "clinic team sent", PASS)
        assert app.signing.operator == "alice"
        assert "key alice unlocked" in str(app.query_one(HeaderBar).render())
        row = dict(zip(cell_texts(app, "ranking-table", "frame_id"), cell_texts(app, "ranking-table", "status")))
        assert row["kak01-1"] == "dispatched ! DISPUTED"  # words, not colour: a correction still waits
        await select_row(app, pilot, "ranking-table", "kak06-1")
        await sign_mark(app, pilot, "S", "protection kits handed over", None)
        assert "kak06-1" not in cell_texts(app, "ranking-table", "frame_id")  # served: it left the ranking
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert app.signing.operator is None
    assert unlocks == ["alice"]  # one unlock, two signatures
    now = statuses(sample_home)
    assert now["kak01-1"] == "dispatched" and now["kak06-1"] == "served"
    with Receiver(str(sample_home.db)) as r:
        assert audit.verify(r).ok and audit.head(r).count == 3  # alice's add, then the two marks


@run_async
async def test_an_idle_session_locks_and_the_next_mark_asks_again(sample_home):
    with_alice(sample_home)
    app = fixed_app(sample_home, unlock_minutes=15)
    async with app.run_test(size=(80, 24)) as pilot:
        now = [0.0]
        app.signing.clock = lambda: now[0]
        await press_and_settle(pilot, "1")
        await select_row(app, pilot, "cases-table", "dad03-3")
        await sign_mark(app, pilot, "C", "family left the camp", PASS)
        now[0] = 16 * 60
        app._signing_tick()
        assert app.signing.operator is None
        await select_row(app, pilot, "cases-table", "dad03-3")
        await sign_mark(app, pilot, "O", "family came back", PASS)  # asked for the passphrase again
    assert statuses(sample_home)["dad03-3"] == "open"


@run_async
async def test_enter_opens_the_history_of_a_case_from_every_case_screen(sample_home):
    add_lifecycle(sample_home)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        for tab, table in (("2", "ranking-table"), ("1", "cases-table"), ("3", "quarantine-table")):
            await press_and_settle(pilot, tab)
            await select_row(app, pilot, table, "kak01-1")
            await pilot.press("enter")
            await until(lambda: isinstance(app.screen, CaseScreen) and app.screen.story is not None)
            body = shown(app.screen.query_one("#case-body", Static))
            assert "kak01-1" in body and "dispatched ! DISPUTED" in body
            assert "Kakuma1 clinic team sent" in body and "Open conflicts" in body
            await pilot.press("escape")
            await until(lambda: not isinstance(app.screen, CaseScreen))


@run_async
async def test_quarantine_lists_resolved_conflicts_on_request(sample_home):
    with Receiver(str(sample_home.db)) as r:
        r.db.execute_sql("UPDATE quarantine SET status = 'kept_first', resolved_by = 'alice'")
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "3")
        assert cell_texts(app, "quarantine-table", "frame_id") == []
        await press_and_settle(pilot, "t")
        assert cell_texts(app, "quarantine-table", "status") == ["kept first"]
        await press_and_settle(pilot, "t")
        assert cell_texts(app, "quarantine-table", "frame_id") == []


@run_async
async def test_a_conflict_is_compared_with_the_case_as_the_ledger_holds_it_now(sample_home):
    """kak01-1 waits with 9 people against the 3 applied; a second version (5) comes in; the 9 is
    accepted. The panel compares the 5 with the 9 keep-first would keep, and says so."""
    later = frame(3, "Kakuma1", "MED", 5, 86)
    with Receiver(str(sample_home.db)) as r:
        r.ingest_many([("kak01-3", later, "late.txt", 1)], source="cli")
        add_operator(sample_home, r, "alice", PASS)
        fix = next(q for q in r.quarantine() if q.frame_id == "kak01-1")
        signed_action.sign(sample_home, r, resolution("accept_correction"), {"quarantine_id": fix.id},
                           operator="alice", passphrase=PASS, reason="radio")
        ledger_now = r.cases(filter="kak01-1")[0].frame_text
    assert "|9|" in ledger_now
    app = fixed_app(sample_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await press_and_settle(pilot, "3")
        await select_row(app, pilot, "quarantine-table", "kak01-3")
        body = shown(app.query_one("#quarantine-detail", Static))
    assert "ledger now" in body and "first (applied)" not in body
    assert ledger_now in body and later in body and frame(1, "Kakuma1", "MED", 3, 86) not in body
    people = next(line for line in body.splitlines() if " people " in line)
    assert people.split()[-2:] == ["9", "5"] and people.lstrip().startswith("≠")
