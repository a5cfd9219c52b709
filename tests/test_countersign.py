"""A second pair of eyes: with ``[signing] countersign``, an admin's change waits for another admin.

Through the real CLI: the held request applies nothing, the requester and a
non-admin cannot approve it, a second admin's approval applies it, a rejection
closes it, an old request expires, one admin alone is told the policy cannot be
met; and ``audit verify`` replays it all, naming approvals forged with valid keys.
"""

from __future__ import annotations

import json
import time

import pytest

from core import Receiver
from core.rules.retention import DAY
from core.signing import actions, audit, countersign, signed_action
from core.signing.operator_add import add_operator
from core.signing.operators import load_signer
from core.signing.roles import ADMIN, DISPATCHER, RESOLVER

from .support.signing import PASSPHRASES, passfile, snapshot
from .support.trust_support import cli, run, unlock, write_entry

PASSPHRASES.setdefault("rita", "rita passphrase")
PASSPHRASES.setdefault("eve", "eve passphrase")


def policy(home, *kinds: str, hours: float | None = None) -> None:
    text = "[signing]\ncountersign = [" + ", ".join(f'"{k}"' for k in kinds) + "]\n"
    if hours is not None:
        text += f"countersign_hours = {hours}\n"
    home.config.write_text(text)


def signed_run(home, target, tmp_path, operator, *argv):
    """A signed command in its own process, as an operator types it."""
    return run(home, target, *argv, "--operator", operator, "--reason", "checked with the site",
               "--passphrase-file", passfile(tmp_path, operator))


def one_line_refusal(done, *words: str) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def as_json(done) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def verdict(home, target) -> dict:
    done = run(home, target, "audit", "verify", "--json")
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def waiting(home, target) -> list[dict]:
    done = run(home, target, "--json", "pending")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def retention_days(target) -> float:
    with Receiver(target) as r:
        return r.retention_seconds() / DAY


def roles(home, target) -> dict[str, list[str]]:
    done = run(home, target, "--json", "operator", "list")
    return {row["name"]: row["roles"] for row in map(json.loads, done.stdout.splitlines())}


def state(target):
    class _H:
        db = target
    return snapshot(_H)


def add(home, target, tmp_path, name, approver, *role) -> None:
    argv = ["operator", "add", name, "--passphrase-file", passfile(tmp_path, name),
            "--operator", approver, "--operator-passphrase-file", passfile(tmp_path, approver)]
    for r in role:
        argv += ["--role", r]
    assert cli(home, target, *argv) == 0


@pytest.fixture
def board(home, tmp_path):
    """alice (first: every role), bob a second admin, rita a resolver; countersign is then on for retention."""
    target = str(home.db)
    assert cli(home, target, "operator", "add", "alice", "--passphrase-file", passfile(tmp_path, "alice")) == 0
    add(home, target, tmp_path, "bob", "alice", ADMIN)
    add(home, target, tmp_path, "rita", "alice", RESOLVER)
    policy(home, "retention")
    return home, target


def test_a_retention_change_waits_for_a_second_admin(board, tmp_path):
    home, target = board
    before = retention_days(target)
    held = as_json(signed_run(home, target, tmp_path, "alice", "--json", "retention", "set", "10"))
    rid = held["pending"]
    assert held["action"] == "retention.set" and held["requested_by"] == "alice"
    assert retention_days(target) == before  # nothing applied
    [listed] = waiting(home, target)
    assert (listed["id"], listed["status"], listed["requested_by"]) == (rid, "waiting", "alice")
    assert "to 10 days" in listed["what"]
    assert verdict(home, target)["ok"]

    unchanged = state(target)
    one_line_refusal(signed_run(home, target, tmp_path, "alice", "approve", str(rid)), "second admin")
    one_line_refusal(signed_run(home, target, tmp_path, "rita", "approve", str(rid)), "admin role")
    assert state(target) == unchanged

    done = signed_run(home, target, tmp_path, "bob", "approve", str(rid))
    assert done.returncode == 0, done.stderr
    assert "approved and applied" in done.stdout
    assert retention_days(target) == 10
    with Receiver(target) as r:
        assert r.retention()["set_by"] == "alice"  # the requester's change, approved by bob
    assert waiting(home, target) == []
    one_line_refusal(signed_run(home, target, tmp_path, "bob", "approve", str(rid)), "already approved")
    result = verdict(home, target)
    assert result["ok"], result


def test_the_console_says_a_change_waits_in_plain_words(board, tmp_path):
    home, target = board
    done = signed_run(home, target, tmp_path, "alice", "retention", "set", "12")
    assert done.returncode == 0, done.stderr
    assert "waiting for a second admin: request" in done.stdout and "ussd-console approve" in done.stdout
    listing = run(home, target, "pending")
    assert listing.returncode == 0 and "alice" in listing.stdout and "12 days" in listing.stdout


def test_a_rejected_request_applies_nothing(board, tmp_path):
    home, target = board
    rid = as_json(signed_run(home, target, tmp_path, "alice", "--json", "retention", "set", "10"))["pending"]
    one_line_refusal(signed_run(home, target, tmp_path, "rita", "reject", str(rid)), "admin role")
    done = as_json(signed_run(home, target, tmp_path, "bob", "--json", "reject", str(rid)))
    assert done["rejected"] == rid
    assert retention_days(target) != 10 and waiting(home, target) == []
    one_line_refusal(signed_run(home, target, tmp_path, "bob", "approve", str(rid)), "already rejected")
    assert verdict(home, target)["ok"]


def test_one_admin_alone_is_told_the_policy_cannot_be_met(home, tmp_path):
    target = str(home.db)
    assert cli(home, target, "operator", "add", "alice", "--passphrase-file", passfile(tmp_path, "alice")) == 0
    add(home, target, tmp_path, "rita", "alice", RESOLVER)
    policy(home, "retention", "operator")
    before = state(target)
    one_line_refusal(signed_run(home, target, tmp_path, "alice", "retention", "set", "10"),
                     "only active admin", "nothing was signed")
    one_line_refusal(signed_run(home, target, tmp_path, "alice", "operator", "grant", "rita", "admin"),
                     "only active admin", "countersign")
    assert state(target) == before and waiting(home, target) == []


def test_a_bad_countersign_setting_is_named(board, tmp_path):
    home, target = board
    home.config.write_text('[signing]\ncountersign = ["retentoin"]\n')
    one_line_refusal(signed_run(home, target, tmp_path, "alice", "retention", "set", "10"), "countersign")
    home.config.write_text('[signing]\ncountersign = ["retention"]\ncountersign_hours = 0\n')
    one_line_refusal(signed_run(home, target, tmp_path, "alice", "retention", "set", "10"), "countersign_hours")


def test_gateway_and_operator_changes_are_held_too(board, tmp_path):
    home, target = board
    policy(home, "gateway", "operator")
    gw = as_json(signed_run(home, target, tmp_path, "alice", "--json", "gateway", "add", "field1", "--kind", "generic"))
    assert gw["path"].startswith("/in/field1/")  # the token is shown to the requester, once
    assert run(home, target, "--json", "gateway", "list").stdout == ""
    assert signed_run(home, target, tmp_path, "bob", "approve", str(gw["pending"])).returncode == 0
    [row] = map(json.loads, run(home, target, "--json", "gateway", "list").stdout.splitlines())
    assert (row["name"], row["added_by"]) == ("field1", "alice")

    done = run(home, target, "--json", "operator", "add", "eve", "--passphrase-file", passfile(tmp_path, "eve"),
               "--role", DISPATCHER, "--operator", "alice", "--operator-passphrase-file", passfile(tmp_path, "alice"))
    eve = as_json(done)["pending"]
    assert "eve" not in roles(home, target) and (home.operators / "eve.key").exists()
    grant = as_json(signed_run(home, target, tmp_path, "alice", "--json", "operator", "grant", "rita", DISPATCHER))
    own = as_json(signed_run(home, target, tmp_path, "alice", "--json", "operator", "grant", "bob", RESOLVER))
    assert {w["id"] for w in waiting(home, target)} == {eve, grant["pending"], own["pending"]}
    one_line_refusal(signed_run(home, target, tmp_path, "rita", "approve", str(grant["pending"])), "admin role")
    one_line_refusal(signed_run(home, target, tmp_path, "bob", "approve", str(own["pending"])), "own roles")
    for rid in (eve, grant["pending"]):
        assert signed_run(home, target, tmp_path, "bob", "approve", str(rid)).returncode == 0
    assert roles(home, target)["eve"] == [DISPATCHER] and roles(home, target)["rita"] == [DISPATCHER, RESOLVER]
    retire = as_json(signed_run(home, target, tmp_path, "bob", "--json", "operator", "retire", "eve"))
    assert roles(home, target)["eve"] == [DISPATCHER]
    assert as_json(signed_run(home, target, tmp_path, "alice", "--json", "approve", str(retire["pending"])))
    done = run(home, target, "--json", "operator", "list")
    assert not next(r for r in map(json.loads, done.stdout.splitlines()) if r["name"] == "eve")["active"]
    result = verdict(home, target)
    assert result["ok"], result


def test_a_rejected_new_operator_leaves_their_key_file_aside(board, tmp_path):
    home, target = board
    policy(home, "operator")
    done = run(home, target, "--json", "operator", "add", "eve", "--passphrase-file", passfile(tmp_path, "eve"),
               "--role", RESOLVER, "--operator", "alice", "--operator-passphrase-file", passfile(tmp_path, "alice"))
    rid = as_json(done)["pending"]
    result = as_json(signed_run(home, target, tmp_path, "alice", "--json", "reject", str(rid)))  # withdrawn
    assert not (home.operators / "eve.key").exists()
    assert (home.operators / f"eve.key.rejected-{rid}").exists()
    assert result["key_file_moved_to"].endswith(f"eve.key.rejected-{rid}")
    assert "eve" not in roles(home, target) and verdict(home, target)["ok"]


# -- expiry: a request made long ago, through the library, then approved through the CLI -----------------
@pytest.fixture
def old_request(home, tmp_path):
    """alice and bob (admins) added 100 h ago; alice's retention request made then, for 72 h."""
    target = str(home.db)
    policy(home, "retention")
    t0 = time.time() - 100 * 3600
    with Receiver(target) as r:
        add_operator(home, r, "alice", PASSPHRASES["alice"], now=t0)
        alice = load_signer(home, r, "alice", PASSPHRASES["alice"])
        add_operator(home, r, "bob", PASSPHRASES["bob"], now=t0 + 1, sponsor=alice, roles=[ADMIN])
        held = signed_action.sign(home, r, actions.RETENTION, {"days": 10},
                                  operator="alice", reason="disk nearly full", now=t0 + 2,
                                  signer=alice)
    return home, target, held["pending"]


def test_an_old_request_expires(old_request, tmp_path):
    home, target, rid = old_request
    [listed] = waiting(home, target)
    assert listed["status"] == "expired"
    before = state(target)
    one_line_refusal(signed_run(home, target, tmp_path, "bob", "approve", str(rid)), "expired")
    assert state(target) == before and retention_days(target) != 10
    assert verdict(home, target)["ok"]
    assert signed_run(home, target, tmp_path, "bob", "reject", str(rid)).returncode == 0  # closed
    assert waiting(home, target) == [] and verdict(home, target)["ok"]


def test_verify_names_an_approval_made_after_expiry(old_request):
    """bob's real key signs an approval straight into the store, after the request expired."""
    home, target, rid = old_request
    forge(home, target, "bob", rid)
    result = verdict(home, target)
    assert not result["ok"] and "expired" in result["why"] and f"request #{rid}" in result["why"]


# -- approvals forged with valid keys: audit verify names each ------------------------------------------
def forge(home, target, who: str, rid: int, request_hash: str | None = None) -> int:
    """Sign an approval of request ``rid`` with ``who``'s real key and write it past every check."""
    with Receiver(target) as r:
        signer = unlock(home, who)
        head = audit.head(r)
        if request_hash is None:
            request_hash = countersign.requests(r)[rid].hash
        payload = {"request": rid, "request_hash": request_hash}
        write_entry(r, signer, audit.signed_fields(
            head.count + 1, "countersign.approve", f"request:{rid}", "forged", who, signer.fingerprint,
            time.time(), head.hash, audit.canonical_json(payload)))
        return head.count + 1


@pytest.mark.parametrize("who, bound, named", [
    ("alice", True, "self-approval"),  # the requester
    ("rita", True, "lacks role"),  # not an admin
    ("bob", False, "unbound approval"),  # an admin, but bound to another hash
])
def test_verify_names_a_forged_approval(board, tmp_path, who, bound, named):
    home, target = board
    rid = as_json(signed_run(home, target, tmp_path, "alice", "--json", "retention", "set", "10"))["pending"]
    seq = forge(home, target, who, rid, None if bound else "0" * 64)
    result = verdict(home, target)
    assert not result["ok"] and result["first_bad_seq"] == seq
    assert named in result["why"] and f"entry #{seq}" in result["why"], result["why"]


def test_an_approved_change_whose_row_was_forged_is_named(board, tmp_path):
    """The approval applies the requested value: a row edited beside it differs from what was signed."""
    home, target = board
    rid = as_json(signed_run(home, target, tmp_path, "alice", "--json", "retention", "set", "10"))["pending"]
    assert signed_run(home, target, tmp_path, "bob", "approve", str(rid)).returncode == 0
    with Receiver(target) as r:
        r.db.execute_sql(f"UPDATE retention_policy SET retention_seconds = {5 * DAY}")
    result = verdict(home, target)
    assert not result["ok"] and any("retention_seconds" in row for row in result.get("rows", [])), result


# -- operator add names the roles after the first operator ------------------------------------------
def test_a_new_operator_without_a_role_is_refused_in_one_line(board, tmp_path):
    home, target = board
    before = state(target)
    done = run(home, target, "operator", "add", "eve", "--passphrase-file", passfile(tmp_path, "eve"),
               "--operator", "alice", "--operator-passphrase-file", passfile(tmp_path, "alice"))
    one_line_refusal(done, "--role", "admin, resolver, dispatcher")
    assert state(target) == before and not (home.operators / "eve.key").exists()
    with Receiver(target) as r, pytest.raises(ValueError, match="--role"):
        add_operator(home, r, "eve", PASSPHRASES["eve"], sponsor=load_signer(home, r, "alice", PASSPHRASES["alice"]))


def test_verify_names_a_second_approval_of_a_decided_request(board, tmp_path):
    home, target = board
    rid = as_json(signed_run(home, target, tmp_path, "alice", "--json", "retention", "set", "10"))["pending"]
    assert signed_run(home, target, tmp_path, "bob", "approve", str(rid)).returncode == 0
    assert verdict(home, target)["ok"]
    seq = forge(home, target, "bob", rid)
    result = verdict(home, target)
    assert not result["ok"] and result["first_bad_seq"] == seq and "decided twice" in result["why"], result
