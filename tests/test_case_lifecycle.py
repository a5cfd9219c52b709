"""Carrying a case to done (docs/rules.md#carrying-a-case-to-done), in process on both backends: signed marks, R14,
the ranking and its disputed flag, a case's story, verify over the marks, the upgrade
of an older store, and the signing session."""

from __future__ import annotations

import sqlite3

import pytest

from core import Outcome, Receiver
from core.home import Home
from core.signing import actions, audit, marks, signed_action
from core.signing.case_story import case_story
from core.signing.keys import ActionError
from core.signing.operator_add import add_operator
from core.signing.operators import load_signer
from core.signing.session import SigningSession
from core.store import migrations
from tests.support.helpers import frame, is_seen
from tests.support.signing import PASS

A1 = ("A-1", frame(1, "Kakuma1", "MED", 3, 86))
A1_FIX = ("A-1", frame(1, "Kakuma1", "MED", 7, 86))
B2 = ("B-2", frame(2, "Dadaab", "WAT", 12, 70))
B1 = ("B-1", frame(1, "Dadaab", "WAT", 12, 70))  # B re-ranked: same values
B1_FIX = ("B-1", frame(1, "Dadaab", "WAT", 14, 90))
T0 = 1_700_000_000.0


@pytest.fixture
def home(tmp_path):
    return Home(tmp_path / "home").ensure()


@pytest.fixture
def signed(receiver, home):
    """A receiver with cases A and B and an operator alice."""
    receiver.ingest_many([A1, B2], now=T0, source="cli")
    add_operator(home, receiver, "alice", PASS)
    return receiver


def mark(home, r, fid, status, reason="checked", now=None):
    return signed_action.sign(home, r, marks.MARK, {"frame_id": fid, "status": status},
                              operator="alice", passphrase=PASS, reason=reason, now=now)


def state(r):
    m = r.m
    return {
        "cases": list(m.Case.select().order_by(m.Case.id).dicts()),
        "marks": list(m.CaseMark.select().dicts()),
        "totals": {t.name: t.value for t in m.Total.select()},
        "audit": audit.head(r),
    }


def test_a_case_is_dispatched_then_served_and_leaves_the_ranking(signed, home):
    r = signed
    done = mark(home, r, "A-1", "dispatched", "team left at 9")
    assert done["status"] == "dispatched" and done["entry"]["action"] == "case.mark"
    assert [(c.frame_id, c.status) for c in r.ranking()] == [("A-1", "dispatched"), ("B-2", "open")]
    mark(home, r, "A-1", "served", "team handed over the kits")
    assert [c.frame_id for c in r.ranking()] == ["B-2"]
    assert [(c.frame_id, c.status) for c in r.ranking(include_done=True)] == [("A-1", "served"), ("B-2", "open")]
    assert r.totals().cases_by_status == {"open": 1, "dispatched": 0, "served": 1, "closed": 0}
    assert r.count_ranked() == 1 and r.count_ranked(include_done=True) == 2
    assert audit.verify(r).ok
    story = case_story(r, "A-1")
    assert [(x["from"], x["to"], x["by"]) for x in story["marks"]] == [
        ("open", "dispatched", "alice"), ("dispatched", "served", "alice")]
    mark(home, r, "A-1", "open", "kits never arrived")  # re-opened: back in the ranking
    assert [c.frame_id for c in r.ranking()] == ["A-1", "B-2"]
    assert audit.verify(r).ok


@pytest.mark.parametrize("fid,status,words", [
    ("Z-1", "served", "no case with frame id Z-1"),
    ("bad id!", "served", "a frame id is"),
    ("A-1", "finished", "a case status is one of"),
    ("A-1", "open", "already open"),
])
def test_a_refused_mark_changes_nothing(signed, home, fid, status, words):
    before = state(signed)
    with pytest.raises(ActionError, match=words):
        mark(home, signed, fid, status)
    assert state(signed) == before


def test_a_done_case_cannot_jump_to_dispatched(signed, home):
    mark(home, signed, "A-1", "closed", "family moved to another camp")
    before = state(signed)
    with pytest.raises(ActionError, match="a closed case cannot be marked dispatched"):
        mark(home, signed, "A-1", "dispatched")
    with pytest.raises(ActionError, match="wrong passphrase"):
        signed_action.sign(home, signed, marks.MARK, {"frame_id": "A-1", "status": "open"},
                           operator="alice", passphrase="nope nope", reason="x")
    assert state(signed) == before


def test_any_version_of_a_case_names_it(signed, home):
    r = signed
    assert r.ingest("B-1", B1[1], now=T0 + 1).reason == "rerank"
    mark(home, r, "B-1", "dispatched")  # the re-ranked copy's id names case B
    assert r.m.Case.get(r.m.Case.frame_id == "B-2").status == "dispatched"
    with pytest.raises(ActionError, match="no case with frame id B-9"):
        mark(home, r, "B-9", "served")  # never seen: not a version of anything


def test_r14_a_mark_never_changes_dedup(signed, home):
    r = signed
    mark(home, r, "A-1", "served", "delivered")
    again = r.ingest(*A1, now=T0 + 60)
    assert (again.outcome, again.reason) == (Outcome.DUPLICATE, "retransmit")
    fix = r.ingest(*A1_FIX, now=T0 + 61)
    assert fix.outcome == Outcome.CONFLICT_QUARANTINED
    rerank = r.ingest(*B1_FIX, now=T0 + 62)
    assert rerank.outcome == Outcome.CONFLICT_QUARANTINED
    a = r.m.Case.get(r.m.Case.frame_id == "A-1")
    assert a.status == "served" and a.headcount == 3  # nothing re-opened or overwritten
    # The served case is now disputed: a correction waits for an operator.
    assert case_story(r, "A-1")["case"]["disputed"] is True
    assert [c.frame_id for c in r.ranking(include_done=True) if c.disputed] == ["A-1", "B-2"]


def test_r14_marks_survive_eviction(signed, home):
    r = signed
    mark(home, r, "A-1", "dispatched")
    assert r.evict(now=T0 + 40 * 86400, started_by="test") == 2
    assert not is_seen(r, "A-1")
    assert r.ingest(*A1, now=T0 + 40 * 86400).reason == "after_eviction"
    assert r.m.Case.get(r.m.Case.frame_id == "A-1").status == "dispatched"
    assert case_story(r, "A-1")["marks"][0]["to"] == "dispatched"
    assert audit.verify(r).ok


def test_case_story_lists_every_version_after_an_accepted_correction(signed, home):
    r = signed
    r.ingest(*A1_FIX, now=T0 + 5)
    (q,) = r.quarantine()
    assert case_story(r, "A-1")["open_conflicts"][0]["id"] == q.id
    signed_action.sign(home, r, actions.resolution("accept_correction"), {"quarantine_id": q.id},
                       operator="alice", passphrase=PASS,
                       reason="site radioed 7")
    story = case_story(r, "A-1")
    assert [(v["version"], v["headcount"], v["how"]) for v in story["versions"]] == [
        (1, 3, "applied"), (2, 7, "accepted correction")]
    assert story["versions"][1]["by"] == "alice" and story["versions"][1]["reason"] == "site radioed 7"
    assert story["open_conflicts"] == [] and story["case"]["disputed"] is False


@pytest.mark.parametrize("tamper,words", [
    ("UPDATE case_marks SET to_status = 'closed'", "case mark #1 (to_status) differs from what entry #2 signed"),  # #1 adds alice
    ("UPDATE case_marks SET reason = 'x'", "(reason) differs"),
    ("DELETE FROM case_marks", "is not in the case marks"),
    ("UPDATE cases SET status = 'served' WHERE frame_id = 'B-2'", "case B-2 is served but its signed marks leave it open"),
    ("UPDATE cases SET status = 'open'", "case A-1 is open but its signed marks leave it dispatched"),
])
def test_verify_names_a_mark_or_a_status_edited_by_sql(signed, home, tamper, words):
    r = signed
    mark(home, r, "A-1", "dispatched")
    assert audit.verify(r).ok
    r.db.execute_sql(tamper)
    result = audit.verify(r)
    named = " | ".join(result.rows)
    assert not result.ok and words in named, result


def test_verify_names_a_mark_row_without_its_entry(signed, home):
    r = signed
    mark(home, r, "A-1", "dispatched")
    r.m.CaseMark.create(case=2, case_key="rec:B", frame_id="B-2", from_status="open", to_status="served", at=T0,
                        operator="alice", reason="forged", audit_seq=99)
    r.db.execute_sql("UPDATE cases SET status = 'served' WHERE frame_id = 'B-2'")
    result = audit.verify(r)
    assert not result.ok and "has no signed entry" in " | ".join(result.rows), result


def test_an_older_store_upgrades_and_its_cases_become_open(tmp_path, monkeypatch):
    path = str(tmp_path / "old.db")
    monkeypatch.setattr(migrations, "MIGRATIONS", [m for m in migrations.MIGRATIONS if m[0] < 14])
    with Receiver(path) as r:
        r.ingest_many([A1, B2], now=T0)
    con = sqlite3.connect(path)  # as a store made before the lifecycle: no status column
    con.execute("ALTER TABLE cases DROP COLUMN status")
    con.commit()
    con.close()
    monkeypatch.undo()
    with Receiver(path) as r:
        assert {c.frame_id: c.status for c in r.ranking()} == {"A-1": "open", "B-2": "open"}
        assert r.totals().cases_by_status["open"] == 2
        assert r.ingest("C-1", frame(1, "Ifo", "SHE", 8, 80), now=T0).outcome == Outcome.APPLIED
        assert r.m.Case.get(r.m.Case.frame_id == "C-1").status == "open"


def test_the_signing_session_keeps_a_key_until_idle_or_locked(signed, home):
    now = [0.0]
    session = SigningSession(15 * 60, clock=lambda: now[0])
    signer = load_signer(home, signed, "alice", PASS)
    assert session.signer_for("alice") is None
    session.unlock(signer)
    now[0] = 14 * 60
    assert session.signer_for("alice") is signer and session.operator == "alice"
    assert session.signer_for("bob") is None
    now[0] += 14 * 60  # a use restarted the idle time
    assert session.operator == "alice" and session.lock_if_idle() is None
    now[0] += 15 * 60
    assert session.operator is None and session.lock_if_idle() == "alice"
    assert session.signer_for("alice") is None
    session.unlock(signer)
    assert session.lock() == "alice" and session.signer_for("alice") is None
    never = SigningSession(0)
    never.unlock(signer)
    assert never.signer_for("alice") is None


def test_a_mark_signed_with_an_unlocked_key_needs_no_passphrase(signed, home):
    signer = load_signer(home, signed, "alice", PASS)
    signed_action.sign(home, signed, marks.MARK, {"frame_id": "A-1", "status": "dispatched"},
                       operator="alice", signer=signer, reason="team sent")
    signed_action.sign(home, signed, marks.MARK, {"frame_id": "B-2", "status": "served"},
                       operator="alice", signer=signer, reason="handed over")
    assert audit.head(signed).count == 3 and audit.verify(signed).ok  # alice's add, then the two marks
    with pytest.raises(ActionError, match="the unlocked key is alice's"):
        signed_action.sign(home, signed, marks.MARK, {"frame_id": "A-1", "status": "served"},
                           operator="bob", signer=signer, reason="x")
