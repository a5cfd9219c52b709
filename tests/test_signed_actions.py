"""Signed actions through the command line: each moves the ledger, the quarantine queue,
the retention policy and the audit log exactly as described, or changes nothing."""

from __future__ import annotations

import copy
import json

import pytest

from core.signing import actions, signed_action
from core.signing import audit
from core import Receiver
from core.signing.keys import ActionError
from core.rules.retention import DAY

from .support.helpers import frame
from .support.signing import (
    A1, A1_FIX, B1_FIX, B2, C1, add_operators, cli, ingest, json_lines, quarantine_id, sign, snapshot,
)


@pytest.fixture
def conflicted(home, tmp_path):
    """Three cases applied, two conflicts waiting (one same-id, one re-ranked)."""
    add_operators(home, tmp_path, "alice", "bob")
    ingest(home, tmp_path, [A1, B2, C1, A1_FIX, B1_FIX])
    return home


def _without(snap: dict, *keys: str) -> dict:
    return {k: v for k, v in snap.items() if k not in keys}


def _one_entry(before, after, action, target, operator="alice", reason="checked with the site"):
    assert len(after["audit"]) == len(before["audit"]) + 1
    entry = after["audit"][-1]
    assert (entry["seq"], entry["action"], entry["target"], entry["operator"], entry["reason"]) == (
        len(after["audit"]), action, target, operator, reason)
    assert entry["prev_hash"] == (before["audit"][-1]["hash"] if before["audit"] else audit.GENESIS)
    assert after["head"] == [{"id": 1, "count": entry["seq"], "head_hash": entry["hash"],
                              "updated_at": entry["at"]}]
    return entry


def test_keep_first_dismisses_the_newcomer_and_leaves_the_ledger(conflicted, tmp_path, capsys):
    home = conflicted
    qid = quarantine_id(home, *A1_FIX)
    before = snapshot(home)
    capsys.readouterr()
    assert sign(home, tmp_path, "resolve", str(qid), "--keep-first") == 0
    out = capsys.readouterr().out
    assert "About to sign" in out and "keep first" in out and f"conflict #{qid}: kept the first version" in out
    after = snapshot(home)
    entry = _one_entry(before, after, "resolve.keep_first", f"quarantine:{qid}")
    payload = json.loads(entry["payload"])
    assert payload["decision"] == "keep_first" and payload["newcomer"]["frame_text"] == A1_FIX[1]
    # the ledger, its history, the totals, the ranking and the policy are untouched
    for key in ("cases", "history", "totals", "ranking", "policy", "operators"):
        assert after[key] == before[key], key
    q_before = {q["id"]: q for q in before["quarantine"]}
    for q in after["quarantine"]:
        if q["id"] == qid:
            assert (q["status"], q["resolved_by"], q["resolved_at"]) == ("kept_first", "alice", entry["at"])
            assert {**q, "status": "open", "resolved_by": None, "resolved_at": None} == q_before[qid]
        else:
            assert q == q_before[q["id"]]
    settled = {(s["case_key"], s["frame_text"], s["payload"], s["quarantine_id"]) for s in after["settlements"]}
    assert settled == {("rec:A", A1[1], "Kakuma1|MED|3|86", qid), ("rec:A", A1_FIX[1], "Kakuma1|MED|7|86", qid)}


def test_accept_correction_moves_ledger_history_totals_and_ranking(conflicted, tmp_path):
    home = conflicted
    qid = quarantine_id(home, *B1_FIX)
    before = snapshot(home)
    assert before["ranking"][0] == ("A-1", 3, 86)
    assert sign(home, tmp_path, "resolve", str(qid), "--accept-correction", operator="bob",
                reason="site radioed the right count") == 0
    after = snapshot(home)
    entry = _one_entry(before, after, "resolve.accept_correction", f"quarantine:{qid}", "bob",
                       "site radioed the right count")
    old = next(c for c in before["cases"] if c["case_key"] == "rec:B")
    new = next(c for c in after["cases"] if c["case_key"] == "rec:B")
    assert new == {**old, "frame_text": B1_FIX[1], "seq": 1, "headcount": 14, "pri": 90,
                   "updated_at": entry["at"], "version": 2}
    assert new["frame_id"] == "B-2" and new["case_key"] == "rec:B"  # identity kept
    assert [c for c in after["cases"] if c["case_key"] != "rec:B"] == [
        c for c in before["cases"] if c["case_key"] != "rec:B"]
    [hist] = after["history"]
    assert hist == {"id": hist["id"], "case": old["id"], "frame_id": "B-2", "frame_text": B2[1],
                    "site": "Dadaab", "need": "WAT", "headcount": 12, "pri": 70,
                    "replaced_at": entry["at"], "quarantine_id": qid}
    assert after["totals"] == {**before["totals"], "headcount": before["totals"]["headcount"] + 2}
    assert after["ranking"][0] == ("B-2", 14, 90)  # the correction outranks at once
    assert after["policy"] == before["policy"]
    [target] = [q for q in after["quarantine"] if q["id"] == qid]
    assert (target["status"], target["resolved_by"]) == ("accepted_correction", "bob")
    assert [q["status"] for q in after["quarantine"] if q["id"] != qid] == ["open"]
    with Receiver(str(home.db)) as r:
        assert r.totals().headcount_total == sum(c.headcount for c in r.cases())
        assert {row.key: row.headcount for row in r.headcount_by("need")}["WAT"] == 14
        assert r.case_history(old["id"])[0]["headcount"] == 12


@pytest.mark.parametrize("decision", ["--keep-first", "--accept-correction"])
def test_r13_either_version_and_a_rerank_are_resolved_earlier(conflicted, tmp_path, decision):
    home = conflicted
    assert sign(home, tmp_path, "resolve", str(quarantine_id(home, *A1_FIX)), decision) == 0
    assert sign(home, tmp_path, "resolve", str(quarantine_id(home, *B1_FIX)), decision) == 0
    before = snapshot(home)
    later = [A1, A1_FIX, B2, B1_FIX,
             ("B-3", frame(3, "Dadaab", "WAT", 14, 90)),  # the newcomer, re-ranked
             ("B-4", frame(4, "Dadaab", "WAT", 12, 70)),  # the first, re-ranked
             ("A-1", A1_FIX[1][:-2] + A1_FIX[1][-2:].upper())]  # the same frame, written "#0A"
    with Receiver(str(home.db)) as r:
        verdicts = r.ingest_many(later, source="cli")
        assert [(v.outcome.value, v.reason) for v in verdicts] == [("DUPLICATE", "resolved_earlier")] * len(later)
        assert not any(v.alert for v in verdicts)
        assert r.per_source()["cli"]["DUPLICATE"] == len(later)
    after = snapshot(home)
    for key in ("cases", "history", "quarantine", "settlements", "totals", "ranking", "audit"):
        assert after[key] == before[key], key
    # a third, different version still raises a conflict: resolved is not "anything goes"
    with Receiver(str(home.db)) as r:
        v = r.ingest(*("B-5", frame(5, "Dadaab", "WAT", 99, 70)), source="cli")
        assert (v.outcome.value, v.alert) == ("CONFLICT_QUARANTINED", True)


def test_a_resolution_settles_other_open_rows_of_the_same_version(home, tmp_path):
    add_operators(home, tmp_path, "alice")
    same_values_other_rank = ("B-1", frame(1, "Dadaab", "WAT", 14, 90))
    same_values_other_id = ("B-7", frame(7, "Dadaab", "WAT", 14, 90))
    different = ("B-8", frame(8, "Dadaab", "WAT", 1, 1))
    ingest(home, tmp_path, [B2, same_values_other_rank, same_values_other_id, different])
    qid = quarantine_id(home, *same_values_other_rank)
    other = quarantine_id(home, *same_values_other_id)
    left = quarantine_id(home, *different)
    assert sign(home, tmp_path, "resolve", str(qid), "--keep-first") == 0
    after = snapshot(home)
    status = {q["id"]: (q["status"], q["resolved_by"]) for q in after["quarantine"]}
    assert status == {qid: ("kept_first", "alice"), other: ("settled", "alice"), left: ("open", None)}
    assert json.loads(after["audit"][-1]["payload"])["also_resolves"] == [other]


def test_retention_set_signed_exception_and_plain_change(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    before = snapshot(home)
    assert sign(home, tmp_path, "retention", "set", "10", reason="disk nearly full") == 0
    mid = snapshot(home)
    entry = _one_entry(before, mid, "retention.set", "retention", reason="disk nearly full")
    assert json.loads(entry["payload"]) == {"from_seconds": 30 * DAY, "to_seconds": 10 * DAY, "exception": True}
    [policy] = mid["policy"]
    assert policy == {"id": policy["id"], "retention_seconds": 10 * DAY, "set_at": entry["at"], "set_by": "alice",
                      "reason": "disk nearly full", "is_exception": True, "audit_id": entry["seq"]}
    assert _without(mid, "policy", "audit", "head") == _without(before, "policy", "audit", "head")

    assert sign(home, tmp_path, "retention", "set", "45", reason="back to normal") == 0
    after = snapshot(home)
    entry = _one_entry(mid, after, "retention.set", "retention", reason="back to normal")
    assert after["policy"][-1]["is_exception"] is False and after["policy"][-1]["audit_id"] == entry["seq"] == 3
    capsys.readouterr()
    assert cli(home, "retention", "show", "--json") == 0
    shown = json_lines(capsys.readouterr().out)[0]
    assert shown["policy"]["retention_seconds"] == 45 * DAY and len(shown["history"]) == 2


@pytest.mark.parametrize("days,message", [
    ("2", "floor is 72 hours"), ("2.99", "floor is 72 hours"), ("0", "positive"), ("-3", "positive"),
    ("nan", "positive"), ("lots", "number of days"), ("30", "already 30 days"),
])
def test_refused_retention_changes_nothing(home, tmp_path, capsys, days, message):
    add_operators(home, tmp_path, "alice")
    before = snapshot(home)
    capsys.readouterr()
    assert sign(home, tmp_path, "retention", "set", days) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert snapshot(home) == before


def test_the_floor_itself_is_allowed_with_a_signature(home, tmp_path):
    add_operators(home, tmp_path, "alice")
    assert sign(home, tmp_path, "retention", "set", "3") == 0
    with Receiver(str(home.db)) as r:
        assert r.retention()["retention_seconds"] == 72 * 3600 and r.retention()["is_exception"]


def _refusals(home, tmp_path):
    """Each bad signing attempt and the words its one-line error must carry."""
    open_q = quarantine_id(home, *A1_FIX)
    return [
        (["resolve", str(open_q), "--keep-first"], {"passphrase": "wrong passphrase!"}, "wrong passphrase"),
        (["resolve", str(open_q), "--accept-correction"], {"passphrase": "wrong passphrase!"}, "wrong passphrase"),
        (["retention", "set", "10"], {"passphrase": "wrong passphrase!"}, "wrong passphrase"),
        (["resolve", str(open_q), "--keep-first"], {"operator": "bob"}, "retired"),
        (["retention", "set", "10"], {"operator": "bob"}, "retired"),
        (["resolve", "999", "--keep-first"], {}, "no quarantine item #999"),
        (["resolve", "zero", "--keep-first"], {}, "whole number"),
        (["resolve", str(open_q), "--keep-first"], {"reason": None}, "--reason"),
        (["resolve", str(open_q), "--keep-first"], {"reason": "   "}, "reason is required"),
        (["resolve", str(open_q), "--keep-first"], {"reason": "two\nlines"}, "one line"),
        (["retention", "set", "10"], {"reason": ""}, "reason is required"),
        (["resolve", str(open_q), "--keep-first"], {"operator": "nobody"}, "no operator named nobody"),
    ]


def test_every_refusal_is_one_line_and_changes_nothing(conflicted, tmp_path, capsys):
    home = conflicted
    assert sign(home, tmp_path, "operator", "retire", "bob", reason="left the team") == 0
    # one resolved item, for the "already resolved" refusal
    done = quarantine_id(home, *B1_FIX)
    assert sign(home, tmp_path, "resolve", str(done), "--keep-first") == 0
    cases = _refusals(home, tmp_path) + [
        (["resolve", str(done), "--accept-correction"], {}, "already resolved"),
        (["resolve", str(done), "--keep-first"], {}, "already resolved"),
    ]
    before = snapshot(home)
    for argv, options, words in cases:
        capsys.readouterr()
        assert sign(home, tmp_path, *argv, **options) == 2, (argv, options)
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1 and "Traceback" not in err, (argv, err)
        assert "wrong passphrase!" not in err
        assert snapshot(home) == before, (argv, options)


def test_an_action_that_fails_midway_leaves_no_entry(conflicted, tmp_path, monkeypatch, capsys):
    """The change and its audit entry commit together or not at all."""
    home = conflicted
    qid = quarantine_id(home, *A1_FIX)
    before = snapshot(home)

    def explode(*args, **kwargs):
        raise ActionError("simulated failure after signing")

    monkeypatch.setattr(actions, "apply_resolve", explode)  # the store's write, after the entry
    assert sign(home, tmp_path, "resolve", str(qid), "--accept-correction") == 2
    assert "simulated failure" in capsys.readouterr().err
    assert snapshot(home) == before
    monkeypatch.undo()
    assert sign(home, tmp_path, "resolve", str(qid), "--accept-correction") == 0
    assert len(snapshot(home)["audit"]) == len(before["audit"]) + 1


def test_what_is_shown_is_what_is_signed(conflicted, tmp_path):
    home = conflicted
    qid = quarantine_id(home, *A1_FIX)
    with Receiver(str(home.db)) as r:
        preview = signed_action.preview(r, actions.ACCEPT, {"quarantine_id": qid}, "alice", "checked")
        assert any("headcount 3 -> 7" in line for line in preview.lines)
        assert "audit entry #3" in preview.text  # after the two operator.add entries
        result = signed_action.sign(home, r, actions.resolution("accept_correction"), {"quarantine_id": qid},
                                    operator="alice",
                                    passphrase="alice passphrase", reason="checked", expected=preview)
        entry = result["entry"]
        assert {k: v for k, v in entry.items() if k not in ("at", "signature", "hash")} == preview.fields
        assert json.loads(entry["payload"]) == preview.payload
        assert audit.signed_text(audit.signed_fields(**{k: entry[k] for k in (
            "seq", "action", "target", "reason", "operator", "key", "at", "prev_hash", "payload")})) \
            == audit.signed_text({k: v for k, v in entry.items() if k not in ("signature", "hash")})


def test_a_stale_preview_is_not_signed(conflicted, tmp_path):
    home = conflicted
    with Receiver(str(home.db)) as r:
        stale = signed_action.preview(r, actions.RETENTION, {"days": 10}, "alice", "disk nearly full")
        signed_action.sign(home, r, actions.RETENTION, {"days": 20},
                           operator="bob", passphrase="bob passphrase", reason="first")
        with pytest.raises(ActionError, match="review it again"):
            signed_action.sign(home, r, actions.RETENTION, {"days": 10},
                               operator="alice", passphrase="alice passphrase",
                               reason="disk nearly full", expected=stale)
        assert r.retention()["retention_seconds"] == 20 * DAY
        assert audit.head(r).count == 3
        fresh = signed_action.preview(r, actions.RETENTION, {"days": 10}, "alice", "disk nearly full")
        changed = copy.deepcopy(fresh)
        changed.fields["reason"] = "something else"
        with pytest.raises(ActionError, match="review it again"):
            signed_action.sign(home, r, actions.RETENTION, {"days": 10},
                               operator="alice", passphrase="alice passphrase",
                               reason="disk nearly full", expected=changed)
        signed_action.sign(home, r, actions.RETENTION, {"days": 10}, operator="alice", passphrase="alice passphrase",
                           reason="disk nearly full", expected=fresh)
        assert audit.verify(r) == audit.VerifyResult(True, 4, None, "4 entries verified")


def test_json_output_of_a_signed_action(conflicted, tmp_path, capsys):
    home = conflicted
    qid = quarantine_id(home, *A1_FIX)
    capsys.readouterr()
    assert sign(home, tmp_path, "--json", "resolve", str(qid), "--keep-first") == 0
    [result] = json_lines(capsys.readouterr().out)
    assert result["quarantine_id"] == qid and result["status"] == "kept_first"
    assert result["entry"]["seq"] == 3 and len(result["entry"]["hash"]) == 64
