"""Who may sign what: roles held at each point of the signed log, enforced when signing and on replay."""

from __future__ import annotations

import json
import shutil

import pytest

from core import Receiver
from core.signing import audit, operator_add
from core.signing.roles import DISPATCHER, RESOLVER

from .support.signing import A1, A1_FIX, B1_FIX, B2, C1, PASSPHRASES, passfile, snapshot
from .support.trust_support import cli, log_rows, qid, run, signed, story, unlock, write_entry

EVERY = ["admin", "dispatcher", "resolver"]


def verdict(home, target, *extra) -> tuple[int, dict]:
    done = run(home, target, "audit", "verify", "--json", *extra)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def roles(home, target) -> dict[str, list[str]]:
    done = run(home, target, "--json", "operator", "list")
    assert done.returncode == 0, done.stderr
    return {row["name"]: row["roles"] for row in map(json.loads, done.stdout.splitlines())}


def add(home, target, tmp_path, name, approver, *role) -> int:
    argv = ["operator", "add", name, "--passphrase-file", passfile(tmp_path, name),
            "--operator", approver, "--operator-passphrase-file", passfile(tmp_path, approver)]
    for r in role:
        argv += ["--role", r]
    return cli(home, target, *argv)


def refused(home, target, tmp_path, operator, *argv, role: str) -> str:
    """Run a signed command in its own process: it must fail in one line naming ``role``, changing nothing."""
    before = snapshot_of(target)
    done = run(home, target, *argv, "--operator", operator, "--reason", "trying",
               "--passphrase-file", passfile(tmp_path, operator))
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert role in lines[0], lines[0]
    assert snapshot_of(target) == before
    return lines[0]


def snapshot_of(target):
    class _H:  # snapshot() reads home.db
        db = target
    return snapshot(_H)


@pytest.fixture(scope="module")
def team_template(tmp_path_factory):
    """alice (first: every role), rita a resolver, dan a dispatcher, an open conflict and a case:
    built once for the module, copied into each test's home (``team``)."""
    from core.home import Home

    tmp_path = tmp_path_factory.mktemp("team")
    home = Home(tmp_path / "home").ensure()
    target = str(home.db)
    assert cli(home, target, "operator", "add", "alice", "--passphrase-file", passfile(tmp_path, "alice")) == 0
    assert add(home, target, tmp_path, "rita", "alice", RESOLVER) == 0
    assert add(home, target, tmp_path, "dan", "alice", DISPATCHER) == 0
    feed = tmp_path / "feed.txt"
    feed.write_text("".join(f"{fid} {text}\n" for fid, text in [A1, B2, C1, A1_FIX, B1_FIX]))
    assert cli(home, target, "ingest", str(feed)) == 0
    return home.root


@pytest.fixture
def team(home, team_template):
    """``team_template`` in this test's home, and its store."""
    shutil.copytree(team_template, home.root, symlinks=True, dirs_exist_ok=True)
    return home, str(home.db)


def test_first_operator_holds_every_role_and_others_what_they_were_given(team):
    home, target = team
    assert roles(home, target) == {"alice": EVERY, "rita": [RESOLVER], "dan": [DISPATCHER]}


def test_a_resolver_resolves_but_cannot_change_retention_or_mark(team, tmp_path):
    home, target = team
    assert signed(home, target, tmp_path, "rita", "resolve", str(qid(target, A1_FIX)), "--keep-first") == 0
    refused(home, target, tmp_path, "rita", "retention", "set", "10", role="admin")
    refused(home, target, tmp_path, "rita", "case", "mark", "C-1", "dispatched", role="dispatcher")
    assert verdict(home, target)[0] == 0


def test_a_dispatcher_marks_but_cannot_resolve_or_retire(team, tmp_path):
    home, target = team
    assert signed(home, target, tmp_path, "dan", "case", "mark", "C-1", "dispatched") == 0
    refused(home, target, tmp_path, "dan", "resolve", str(qid(target, A1_FIX)), "--keep-first", role="resolver")
    refused(home, target, tmp_path, "dan", "operator", "retire", "rita", role="admin")
    refused(home, target, tmp_path, "dan", "operator", "grant", "rita", "admin", role="admin")
    assert verdict(home, target)[0] == 0


def test_nobody_grants_themselves_and_the_last_admin_stays(team, tmp_path):
    home, target = team
    refused(home, target, tmp_path, "rita", "operator", "grant", "rita", "admin", role="own roles")
    refused(home, target, tmp_path, "alice", "operator", "grant", "alice", "resolver", role="own roles")
    refused(home, target, tmp_path, "alice", "operator", "revoke", "alice", "admin", role="own roles")
    # a second admin cannot take the first's admin role when that leaves nobody, nor retire them
    assert signed(home, target, tmp_path, "alice", "operator", "grant", "rita", "admin") == 0
    assert roles(home, target)["rita"] == ["admin", RESOLVER]
    assert signed(home, target, tmp_path, "rita", "operator", "revoke", "alice", "admin") == 0
    assert roles(home, target)["alice"] == [DISPATCHER, RESOLVER]
    refused(home, target, tmp_path, "alice", "operator", "revoke", "rita", "admin", role="admin")  # not one now
    refused(home, target, tmp_path, "rita", "operator", "retire", "rita", role="last admin")
    assert signed(home, target, tmp_path, "alice", "operator", "retire", "dan") != 0  # alice is no admin now
    assert verdict(home, target)[0] == 0


def test_the_last_admin_cannot_be_revoked(team, tmp_path):
    home, target = team
    assert signed(home, target, tmp_path, "alice", "operator", "grant", "dan", "admin") == 0
    assert signed(home, target, tmp_path, "dan", "operator", "revoke", "alice", "admin") == 0
    refused(home, target, tmp_path, "alice", "operator", "revoke", "dan", "admin", role="admin")
    assert signed(home, target, tmp_path, "dan", "operator", "grant", "rita", "admin") == 0
    assert signed(home, target, tmp_path, "rita", "operator", "retire", "alice") == 0
    assert signed(home, target, tmp_path, "rita", "operator", "revoke", "dan", "admin") == 0
    line = refused(home, target, tmp_path, "dan", "operator", "retire", "rita", role="admin")
    assert "dan does not hold the admin role" in line
    assert verdict(home, target)[0] == 0


def test_an_added_role_must_be_a_known_one(team, tmp_path):
    home, target = team
    done = run(home, target, "operator", "add", "eve", "--passphrase-file", passfile(tmp_path, "eve"),
               "--role", "root", "--operator", "alice", "--operator-passphrase-file", passfile(tmp_path, "alice"))
    assert done.returncode == 2 and "admin, resolver, dispatcher" in done.stderr
    assert "eve" not in roles(home, target)


def test_a_resolver_cannot_approve_a_new_operator(team, tmp_path):
    home, target = team
    assert add(home, target, tmp_path, "eve", "rita", RESOLVER) == 2
    assert "eve" not in roles(home, target)


def test_verify_names_an_entry_signed_without_its_role(team, tmp_path):
    """An attacker holding dan's real key (a dispatcher) signs a resolution straight into the store."""
    home, target = team
    with Receiver(target) as r:
        dan = unlock_any(home, "dan")
        head = audit.head(r)
        payload = {"quarantine_id": 1, "decision": "keep_first"}
        write_entry(r, dan, audit.signed_fields(head.count + 1, "resolve.keep_first", "quarantine:1", "forged",
                                                "dan", dan.fingerprint, 2e9, head.hash, audit.canonical_json(payload)))
        seq = head.count + 1
    code, result = verdict(home, target)
    assert code == 1
    assert result["first_bad_seq"] == seq
    assert f"entry #{seq}" in result["why"] and "dan" in result["why"] and "resolver" in result["why"]


def test_verify_names_a_self_grant_written_with_a_valid_key(team, tmp_path):
    home, target = team
    with Receiver(target) as r:
        rita = unlock_any(home, "rita")
        fp = rita.fingerprint
        head = audit.head(r)
        payload = {"name": "rita", "role": "admin", "fingerprint": fp}
        write_entry(r, rita, audit.signed_fields(head.count + 1, "operator.grant", "operator:rita", "forged",
                                                 "rita", rita.fingerprint, 2e9, head.hash,
                                                 audit.canonical_json(payload)))
    code, result = verdict(home, target)
    assert code == 1 and "lacks role" in result["why"] and "admin" in result["why"]


def unlock_any(home, name):
    PASSPHRASES.setdefault(name, "unknown passphrase")
    return unlock(home, name)


# -- a home from before roles ---------------------------------------------------------
def test_a_home_from_before_roles_keeps_every_role_and_its_old_checkpoint(home, tmp_path, monkeypatch):
    target = str(home.db)
    original = operator_add.add_payload

    def before_roles(seq, prev_hash, name, key, sponsor, roles=None):
        return original(seq, prev_hash, name, key, sponsor)  # the payload without a roles field

    with monkeypatch.context() as m:
        m.setattr(operator_add, "add_payload", before_roles)
        story(home, target, tmp_path, retire_carol=False)  # operators, resolutions, a retention exception
        assert signed(home, target, tmp_path, "carol", "case", "mark", "C-1", "dispatched") == 0
        with Receiver(target) as r:
            adds = [json.loads(row["payload"]) for row in log_rows(r) if row["action"] == "operator.add"]
        assert len(adds) == 3 and all("roles" not in p for p in adds)
        old = run(home, target, "audit", "checkpoint")
        assert old.returncode == 0, old.stderr
    checkpoint = tmp_path / "old-checkpoint.txt"
    checkpoint.write_text(old.stdout)
    # the upgrade: every old operator holds every role, and the log and the old checkpoint verify
    assert roles(home, target) == {"alice": EVERY, "bob": EVERY, "carol": EVERY}
    assert verdict(home, target)[0] == 0
    assert verdict(home, target, "--checkpoint", str(checkpoint))[0] == 0
    # and roles work from there on: bob makes carol a dispatcher only
    assert signed(home, target, tmp_path, "bob", "operator", "revoke", "carol", "admin") == 0
    assert signed(home, target, tmp_path, "bob", "operator", "revoke", "carol", "resolver") == 0
    assert roles(home, target)["carol"] == [DISPATCHER]
    refused(home, target, tmp_path, "carol", "retention", "set", "20", role="admin")
    assert signed(home, target, tmp_path, "carol", "case", "mark", "C-1", "served") == 0
    code, result = verdict(home, target, "--checkpoint", str(checkpoint))
    assert code == 0, result


def test_gateways_need_an_admin(team, tmp_path):
    home, target = team
    refused(home, target, tmp_path, "rita", "gateway", "add", "field1", "--kind", "generic", role="admin")
    refused(home, target, tmp_path, "dan", "gateway", "add", "field1", "--kind", "generic", role="admin")
    assert signed(home, target, tmp_path, "alice", "gateway", "add", "field1", "--kind", "generic") == 0
    refused(home, target, tmp_path, "rita", "gateway", "retire", "field1", role="admin")
    assert verdict(home, target)[0] == 0
