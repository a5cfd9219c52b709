"""The six ways past `audit verify` of someone who can write the store but holds no
operator's private key, each reproduced, on both backends where it applies, and caught."""

from __future__ import annotations

import json
import os
import stat

import pytest

from core import Receiver
from core.signing import audit
from core.store.backend import PostgresStore
from core.rules.retention import DAY

from .support.signing import PASSPHRASES, passfile
from .support.trust_support import (
    A1_FIX,
    B1_FIX,
    C2,
    add,
    backdated_entry,
    log_rows,
    qid,
    rewrite_with_new_keys,
    run,
    signed,
    sql,
    story,
    triggers_off,
    triggers_on,
    unlock,
)


@pytest.fixture
def world(home, new_store, tmp_path):
    """A home and a store (SQLite or PostgreSQL) holding the signed story."""
    target = new_store()
    story(home, target, tmp_path)
    return home, target


def verdict(home, target, *extra, stdin=None) -> tuple[int, dict]:
    done = run(home, target, "audit", "verify", "--json", *extra, stdin=stdin)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def checkpoint(home, target) -> str:
    done = run(home, target, "audit", "checkpoint")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_story_verifies_and_checkpoints_extend(world, tmp_path):
    home, target = world
    code, result = verdict(home, target)
    assert (code, result["ok"], result["count"], result["rows"]) == (0, True, 8, [])
    text = checkpoint(home, target)
    line = text.splitlines()[0]
    assert line.startswith("ussd-checkpoint v1 entries=8 head=") and "op:alice=" in line and "op:carol" not in line
    (tmp_path / "cp.txt").write_text(text)
    assert verdict(home, target, "--checkpoint", str(tmp_path / "cp.txt"))[0] == 0
    as_json = run(home, target, "--json", "audit", "checkpoint").stdout
    assert json.loads(as_json)["entries"] == 8
    assert verdict(home, target, "--checkpoint", "-", stdin=as_json)[0] == 0
    # the log grows after the checkpoint: it still extends it
    assert signed(home, target, tmp_path, "bob", "retention", "set", "35") == 0
    code, result = verdict(home, target, "--checkpoint", str(tmp_path / "cp.txt"))
    assert (code, result["count"]) == (0, 9)


# -- attack 1 -------------------------------------------------------------------------
def test_1_key_replacement_with_a_flipped_decision_is_named_and_fails_the_checkpoint(world, tmp_path):
    home, target = world
    kept = checkpoint(home, target)
    with Receiver(target) as r:
        rewrite_with_new_keys(r, flip_keep_first=True)
    code, result = verdict(home, target)
    # the chain is consistent with itself, but the tables still say "kept first"
    assert code == 1 and result["count"] == 8
    assert any(row.startswith(f"quarantine #{qid(target, A1_FIX)}: status is kept_first") for row in result["rows"])
    code, result = verdict(home, target, "--checkpoint", "-", stdin=kept)
    assert code == 1 and result["why"].startswith("key replaced: alice's key at entry #8")


def test_1_a_whole_consistent_rewrite_with_new_keys_fails_only_the_checkpoint(world, tmp_path):
    home, target = world
    kept = checkpoint(home, target)
    with Receiver(target) as r:
        forged = rewrite_with_new_keys(r, flip_keep_first=False)
        # with keys of their own the forger can now sign anything, e.g. a short policy
        head = audit.head(r)
        assert head.count == 8
    # Within the store everything agrees: only the checkpoint kept outside shows it.
    assert verdict(home, target)[0] == 0
    code, result = verdict(home, target, "--checkpoint", "-", stdin=kept)
    assert code == 1 and result["why"].startswith("key replaced: alice's key")
    assert forged["alice"].fingerprint[:16] in result["why"]


# -- attack 2 -------------------------------------------------------------------------
def test_2_a_retired_operator_backdating_an_entry_is_bad(world):
    home, target = world
    with Receiver(target) as r:
        retired_at = log_rows(r)[-1]["at"]  # entry #8 retires carol
        triggers_off(r)
        backdated_entry(r, unlock(home, "carol"), at=retired_at - 3600)
    code, result = verdict(home, target)
    assert (code, result["first_bad_seq"], result["count"]) == (1, 9, 8)
    assert result["why"] == "retired: carol was retired by entry #8 and signed this entry after that"


def test_2_an_entry_dated_before_the_one_it_follows_is_bad(world):
    home, target = world
    with Receiver(target) as r:
        last = log_rows(r)[-1]["at"]
        triggers_off(r)
        backdated_entry(r, unlock(home, "bob"), at=last - 3600)
    code, result = verdict(home, target)
    assert (code, result["first_bad_seq"]) == (1, 9)
    assert result["why"].startswith("backdated: entry #9 is dated 3600 s before entry #8")


def test_2_retiring_is_a_signed_entry_and_the_log_knows_who_may_sign(world, tmp_path):
    home, target = world
    with Receiver(target) as r:
        last = audit.entries(r)[-1]
        assert (last["action"], last["target"], last["operator"]) == ("operator.retire", "operator:carol", "alice")
    # a retirement nobody signed (the table alone) is named
    with Receiver(target) as r:
        sql(r, "UPDATE operators SET retired_at = ? WHERE name = 'bob'", (last["at"] + 5,))
    code, result = verdict(home, target)
    assert code == 1 and any(row.startswith("operator bob: retired_at is") for row in result["rows"])


# -- attack 3 -------------------------------------------------------------------------
def test_3_hand_edits_of_the_tables_are_named_and_a_short_policy_is_never_applied(world):
    home, target = world
    with Receiver(target) as r:
        open_id = qid(target, C2)
        sql(r, "UPDATE quarantine SET status = 'accepted_correction', resolved_by = 'alice', resolved_at = 1 "
               "WHERE id = ?", (open_id,))
        case_id = sql(r, "SELECT id FROM cases WHERE frame_id = 'C-1'")[0][0]
        sql(r, "UPDATE cases SET headcount = 500 WHERE id = ?", (case_id,))
        sql(r, "INSERT INTO retention_policy (retention_seconds, set_at, set_by, reason, is_exception, audit_id) "
               "VALUES (3600, 1, 'alice', 'one hour', ?, 7)", (True,))
        assert ("C-1", 500) in [(c.frame_id, c.headcount) for c in r.ranking()]  # dispatch would trust it
    code, result = verdict(home, target)
    assert code == 1 and result["first_bad_seq"] is None and result["count"] == 8
    rows = result["rows"]
    assert f"quarantine #{open_id}: accepted_correction by alice, but no signed entry resolved it" in rows
    assert any(row.startswith(f"case #{case_id}: its values (1, Ifo, SHE, 500, 80)") for row in rows)
    assert "retention policy #3 (3600 s): no signed entry set it (it names entry #7)" in rows
    assert len(rows) == 3
    done = run(home, target, "audit", "verify")
    assert done.returncode == 1 and f"quarantine #{open_id}" in done.stdout and "BAD" in done.stdout
    # eviction keeps 40 days (the last valid policy), and says why, through the CLI
    done = run(home, target, "evict")
    assert done.returncode == 0 and "more than 40 days" in done.stdout
    assert "RETENTION FAULT" in done.stderr and "retention policy #3 (1 hours" in done.stderr
    assert "not applied: it is below the 72-hour floor" in done.stderr
    done = run(home, target, "--json", "evict")
    assert json.loads(done.stdout)["retention_seconds"] == 40 * DAY
    done = run(home, target, "status")
    assert "retention: 40 days" in done.stdout and "RETENTION FAULT" in done.stderr
    with Receiver(target) as r:
        assert r.evictions(limit=1)[0].retention_seconds == 40 * DAY


def test_3_an_unsigned_policy_above_the_floor_is_not_applied_either(world):
    home, target = world
    with Receiver(target) as r:
        sql(r, "INSERT INTO retention_policy (retention_seconds, set_at, set_by, reason, is_exception) "
               "VALUES (?, 1, 'alice', 'no entry', ?)", (5 * DAY, False))
        policy = r.retention()
        assert policy["retention_seconds"] == 40 * DAY and "it has no signed audit entry" in policy["fault"]
        # a replayed older entry is set aside too
        sql(r, "DELETE FROM retention_policy WHERE audit_id IS NULL")
        sql(r, "INSERT INTO retention_policy (retention_seconds, set_at, set_by, reason, is_exception, audit_id) "
               "SELECT retention_seconds, set_at, set_by, reason, is_exception, audit_id FROM retention_policy "
               "WHERE audit_id = 6")
        policy = r.retention()
        assert policy["retention_seconds"] == 40 * DAY and "repeats audit entry #6" in policy["fault"]


# -- attack 4 -------------------------------------------------------------------------
def test_4_truncation_is_caught_by_a_checkpoint_taken_before(world, tmp_path):
    home, target = world
    kept = checkpoint(home, target)
    with Receiver(target) as r:
        rows = log_rows(r)
        triggers_off(r)
        sql(r, "DELETE FROM audit_log WHERE seq >= 7")
        sql(r, "UPDATE audit_head SET count = ?, head_hash = ?", (6, rows[5]["hash"]))
        # a careful forger removes the effects too: bob's policy and carol's retirement
        sql(r, "DELETE FROM retention_policy WHERE audit_id = 7")
        sql(r, "UPDATE operators SET retired_at = NULL WHERE name = 'carol'")
    assert verdict(home, target)[0] == 0
    code, result = verdict(home, target, "--checkpoint", "-", stdin=kept)
    assert code == 1
    assert result["why"] == "removed: the log holds 6 entries but the checkpoint recorded 8 (entries were cut off)"


def test_4_a_typo_in_a_head_or_a_checkpoint_is_a_usage_error_not_a_tamper_alarm(world, tmp_path):
    home, target = world
    head = verdict(home, target)[1]["head"]
    typo = head[:5] + ("0" if head[5] != "0" else "1") + head[6:16]
    done = run(home, target, "audit", "verify", "--head", typo)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "check the head you typed" in done.stderr and "entry #8" in done.stderr
    assert run(home, target, "audit", "verify", "--head", head[:16]).returncode == 0
    line = checkpoint(home, target).splitlines()[0]
    for broken in (line.replace("entries=8", "entries=9"), line[:-1] + ("0" if line[-1] != "0" else "1"),
                   "not a checkpoint", "{\"entries\": 3}", line.split(" check=")[0]):
        done = run(home, target, "audit", "verify", "--checkpoint", "-", stdin=broken)
        assert done.returncode == 2, (broken, done.stdout)
        assert done.stderr.startswith("ussd-console: error: ") and done.stderr.count("\n") == 1, done.stderr
    done = run(home, target, "audit", "verify", "--checkpoint", str(tmp_path / "missing.txt"))
    assert done.returncode == 2 and "cannot read the checkpoint file" in done.stderr


# -- attack 5 -------------------------------------------------------------------------
def test_5_postgresql_refuses_truncate(home, pg_url, tmp_path):
    from tests.support.pg_server import fresh_schema_url

    target = fresh_schema_url(pg_url)
    story(home, target, tmp_path)
    import peewee

    with Receiver(target) as r:
        sql(r, "ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_delete")  # the row guard alone is not enough
        for table in ("audit_log", "audit_head", "operators"):
            with pytest.raises(peewee.DatabaseError, match=f"{table} cannot be truncated"):
                with r.db.atomic():
                    sql(r, f"TRUNCATE {table}")
        assert audit.head(r).count == 8


def test_5_an_emptied_log_with_signed_state_in_the_tables_is_bad(world):
    home, target = world
    with Receiver(target) as r:
        triggers_off(r)
        if isinstance(r.db, PostgresStore):
            sql(r, "ALTER TABLE audit_log DISABLE TRIGGER ALL")
            sql(r, "TRUNCATE audit_log")
        else:
            sql(r, "DELETE FROM audit_log")
        sql(r, "DELETE FROM audit_head")
    code, result = verdict(home, target)
    assert (code, result["count"], result["ok"]) == (1, 0, False)
    rows = result["rows"]
    accepted = qid(target, B1_FIX)
    assert f"quarantine #{accepted}: accepted_correction by carol, but no signed entry resolved it" in rows
    assert any(row.startswith("operator alice: no signed entry added this operator") for row in rows)
    assert any("no signed entry set it" in row for row in rows)
    assert any(row.startswith("case history #") for row in rows)


# -- attack 6 -------------------------------------------------------------------------
def test_6_a_passphrase_file_others_can_read_is_refused(world, tmp_path):
    home, target = world
    loose = tmp_path / "loose.pass"
    loose.write_text(PASSPHRASES["bob"] + "\n")
    os.chmod(loose, 0o644)
    done = run(home, target, "retention", "set", "20", "--operator", "bob", "--reason", "r",
               "--passphrase-file", loose)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"run: chmod 600 {loose}" in done.stderr and "mode 0644" in done.stderr
    os.chmod(loose, 0o620)  # group-writable: refused too
    done = run(home, target, "operator", "add", "dave", "--passphrase-file", loose, "--operator", "bob",
               "--operator-passphrase-file", passfile(tmp_path, "bob"), "--role", "resolver")
    assert done.returncode == 2 and "chmod 600" in done.stderr
    assert not (home.operators / "dave.key").exists()


def test_6_an_operators_folder_open_to_others_is_refused(world, tmp_path):
    home, target = world
    os.chmod(home.operators, 0o777)
    done = run(home, target, "retention", "set", "20", "--operator", "bob", "--reason", "r",
               "--passphrase-file", passfile(tmp_path, "bob"))
    assert done.returncode == 2 and f"run: chmod 700 {home.operators}" in done.stderr
    assert stat.S_IMODE(os.stat(home.operators).st_mode) == 0o777  # refused, not silently "fixed"
    with Receiver(target) as r:
        assert r.retention()["retention_seconds"] == 40 * DAY


def test_6_a_symlinked_operators_folder_is_refused_and_nothing_is_written_outside(home, new_store, tmp_path):
    target = new_store()
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    os.chmod(outside, 0o755)
    home.operators.symlink_to(outside, target_is_directory=True)
    done = run(home, target, "operator", "add", "alice", "--passphrase-file", passfile(tmp_path, "alice"))
    assert done.returncode == 2 and "symbolic link" in done.stderr and done.stderr.count("\n") == 1
    assert list(outside.iterdir()) == [] and stat.S_IMODE(os.stat(outside).st_mode) == 0o755
    with Receiver(target) as r:
        assert audit.head(r).count == 0


# -- migration of a store from before signed operator changes -------------------------
def _make_legacy(r) -> None:
    """What a store from before this change looks like: operator rows, no operator entries."""
    triggers_off(r)
    sql(r, "DELETE FROM audit_log")
    sql(r, "DELETE FROM audit_head")
    triggers_on(r)


def test_a_store_from_before_adopts_its_operators_once(home, new_store, tmp_path):
    target = new_store()
    add(home, target, tmp_path, "alice")
    add(home, target, tmp_path, "bob", "alice")
    with Receiver(target) as r:
        _make_legacy(r)
    code, result = verdict(home, target)
    assert code == 1 and all("operator adopt" in row for row in result["rows"]) and len(result["rows"]) == 2
    # signing still works before adoption; verify points to the one step left
    assert signed(home, target, tmp_path, "bob", "retention", "set", "20") == 0
    code, result = verdict(home, target)
    assert code == 1 and result["first_bad_seq"] == 1 and "operator adopt" in result["why"]
    # adding or retiring waits for the adoption
    done = run(home, target, "operator", "add", "carol", "--passphrase-file", passfile(tmp_path, "carol"),
               "--operator", "alice", "--operator-passphrase-file", passfile(tmp_path, "alice"), "--role", "resolver")
    assert done.returncode == 2 and "operator adopt" in done.stderr
    done = run(home, target, "operator", "adopt", "--operator", "alice", "--reason", "upgrade to signed operators",
               "--passphrase-file", passfile(tmp_path, "alice"))
    assert done.returncode == 0, done.stderr
    assert "alice" in done.stdout and "bob" in done.stdout and "adopted" in done.stdout
    code, result = verdict(home, target)
    assert (code, result["count"]) == (0, 2)
    done = run(home, target, "operator", "adopt", "--operator", "alice", "--reason", "again",
               "--passphrase-file", passfile(tmp_path, "alice"))
    assert done.returncode == 2 and "nothing to adopt" in done.stderr
    add(home, target, tmp_path, "carol", "bob")
    assert signed(home, target, tmp_path, "carol", "operator", "retire", "alice", reason="moved on") == 0
    assert verdict(home, target)[0] == 0
