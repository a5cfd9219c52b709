"""The audit log on a real SQLite file: random tampering is caught by `audit verify`."""

from __future__ import annotations

import json
import math
import random
import shutil
import sqlite3

import pytest

from core.signing import actions, signed_action
from core.signing import audit
from core import Receiver
from core.signing.audit_models import APPEND_ONLY, audit_models
from core.store.backend import append_only_sqlite
from core.home import Home
from core.signing.keys import ActionError
from core.signing import operator_changes
from core.signing.operators import load_signer

from .support.signing import A1_FIX, B1_FIX, PASSPHRASES, add_operators, cli, ingest, quarantine_id
from .support.signing import A1, B2, C1


def retire(receiver, name, signer, reason, now=None):
    """Retire ``name``, signed by ``signer`` (a library caller: no home, so nothing is countersigned)."""
    return signed_action.sign(None, receiver, operator_changes.RETIRE, {"name": name}, operator=signer.name,
                              signer=signer, reason=reason, now=now)


TRIALS = 100
COLUMNS = ["seq", "action", "target", "reason", "operator", "key", "at", "prev_hash", "payload",
           "signature", "hash"]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A home whose log holds 17 entries by three operators: their adds, resolves and retention changes."""
    tmp_path = tmp_path_factory.mktemp("pristine")
    home = Home(tmp_path / "home").ensure()
    add_operators(home, tmp_path, "alice", "bob", "carol")
    ingest(home, tmp_path, [A1, B2, C1, A1_FIX, B1_FIX])
    names = ["alice", "bob", "carol"]
    with Receiver(str(home.db)) as r:
        signed_action.sign(home, r, actions.resolution("keep_first"), {"quarantine_id": quarantine_id(home, *A1_FIX)},
                           operator="bob",
                           passphrase=PASSPHRASES["bob"], reason="first count confirmed")
        signed_action.sign(home, r, actions.resolution("accept_correction"), {"quarantine_id": quarantine_id(home, *B1_FIX)},
                           operator="carol",
                           passphrase=PASSPHRASES["carol"], reason="site radioed a correction")
        for i in range(12):
            name = names[i % 3]
            signed_action.sign(home, r, actions.RETENTION, {"days": 20 + i},
                               operator=name, passphrase=PASSPHRASES[name],
                               reason=f"policy review {i}: ünïcode kept")
        signers = {n: load_signer(home, r, n, PASSPHRASES[n]) for n in names}
        assert audit.verify(r) == audit.VerifyResult(True, 17, None, "17 entries verified")
    return home, signers


def _copy(pristine_home: Home, dest) -> Home:
    home = Home(dest).ensure()
    for suffix in ("", "-wal", "-shm"):
        src = pristine_home.db.with_name(pristine_home.db.name + suffix)
        if src.exists():
            shutil.copyfile(src, home.db.with_name(home.db.name + suffix))
    return home


def _open(home: Home) -> sqlite3.Connection:
    """A raw connection, as an attacker would use, with the append-only triggers dropped."""
    con = sqlite3.connect(home.db)
    con.execute("DROP TRIGGER audit_log_no_update")
    con.execute("DROP TRIGGER audit_log_no_delete")
    return con


def _rows(con) -> list[dict]:
    cur = con.execute(f"SELECT id, {', '.join(COLUMNS)} FROM audit_log ORDER BY id")
    return [dict(zip(["id", *COLUMNS], row)) for row in cur.fetchall()]


def _mutate_text(rng: random.Random, value: str, alphabet: str) -> str:
    i = rng.randrange(len(value))
    choice = rng.choice([c for c in alphabet if c != value[i]])
    return value[:i] + choice + value[i + 1 :]


def _edit(rng, con, rows, signers):
    row = rng.choice(rows)
    column = rng.choice(COLUMNS)
    old = row[column]
    if column == "seq":
        used = {r["seq"] for r in rows}
        new = rng.choice([v for v in [0, -1, *range(len(rows) + 1, len(rows) + 20)] if v not in used])
    elif column == "at":
        new = rng.choice([math.nextafter(old, math.inf), old - 1.0, old + rng.uniform(1, 1e6)])
    elif column in ("prev_hash", "signature", "hash"):
        new = _mutate_text(rng, old, "0123456789abcdef")
    elif column == "operator" and rng.random() < 0.5:
        new = rng.choice([n for n in signers if n != old])
    elif column == "key" and rng.random() < 0.5:
        new = rng.choice([s.fingerprint for s in signers.values() if s.fingerprint != old])
    else:
        new = _mutate_text(rng, old, "abcdefghijklmnopqrstuvwxyz0123456789 |:{}\",")
    assert new != old
    con.execute(f"UPDATE audit_log SET {column} = ? WHERE id = ?", (new, row["id"]))
    return row["seq"], None, f"edit {column} of #{row['seq']}"


def _delete(rng, con, rows, signers):
    row = rng.choice(rows)
    con.execute("DELETE FROM audit_log WHERE id = ?", (row["id"],))
    return row["seq"], "removed", f"delete #{row['seq']}"


def _swap(rng, con, rows, signers):
    a, b = sorted(rng.sample(rows, 2), key=lambda r: r["id"])
    con.execute("UPDATE audit_log SET id = -1 WHERE id = ?", (a["id"],))
    con.execute("UPDATE audit_log SET id = ? WHERE id = ?", (a["id"], b["id"]))
    con.execute("UPDATE audit_log SET id = ? WHERE id = -1", (b["id"],))
    return a["seq"], "reordered", f"swap #{a['seq']} and #{b['seq']}"


def _resign(rng, con, rows, signers):
    """Sign an entry again with another operator's key and fix up its hash, as a careful forger would."""
    row = rng.choice(rows)
    other = signers[rng.choice([n for n in signers if n != row["operator"]])]
    claim = rng.random() < 0.5  # also rewrite who signed, or keep the original name
    fields = {k: row[k] for k in COLUMNS if k not in ("signature", "hash")}
    if claim:
        fields.update(operator=other.name, key=other.fingerprint)
    msg = audit.message(audit.signed_fields(**fields))
    signature = other.sign(msg).hex()
    con.execute(
        "UPDATE audit_log SET operator = ?, key = ?, signature = ?, hash = ? WHERE id = ?",
        (fields["operator"], fields["key"], signature, audit.entry_hash(msg, signature), row["id"]),
    )
    # Re-signed under the forger's own name the entry is valid by itself; the chain
    # (or, for the last entry, the head kept beside it) is what gives it away. An operator
    # entry shows it sooner: the signer was no operator yet, or the new key's proof names
    # another approver.
    if claim and row["action"].startswith("operator."):
        return row["seq"], ("edited", "unknown key", "bad signature"), f"re-sign #{row['seq']} as {other.name}"
    return row["seq"], "edited" if claim else "bad signature", f"re-sign #{row['seq']} as {other.name}"


TAMPERS = [_edit, _edit, _delete, _swap, _resign]


def _verify(home: Home, capsys, *extra) -> tuple[int, dict]:
    capsys.readouterr()
    code = cli(home, "audit", "verify", "--json", *extra)
    return code, json.loads(capsys.readouterr().out)


def test_pristine_copy_verifies(pristine, tmp_path, capsys):
    home, _ = pristine
    copy = _copy(home, tmp_path / "copy")
    code, result = _verify(copy, capsys)
    assert (code, result["ok"], result["count"], result["first_bad_seq"]) == (0, True, 17, None)
    assert result["head"] == result["head"].lower() and len(result["head"]) == 64


def test_every_random_tampering_is_caught(pristine, tmp_path, capsys):
    home, signers = pristine
    rng = random.Random(20240605)
    kinds = set()
    for trial in range(TRIALS):
        copy = _copy(home, tmp_path / f"t{trial}")
        con = _open(copy)
        tamper = TAMPERS[trial % len(TAMPERS)] if trial < len(TAMPERS) else rng.choice(TAMPERS)
        expected_seq, expected_kind, what = tamper(rng, con, _rows(con), signers)
        con.commit()
        con.close()
        kinds.add(tamper.__name__)
        code, result = _verify(copy, capsys)
        assert code == 1 and result["ok"] is False, what
        assert result["first_bad_seq"] == expected_seq, (what, result)
        assert result["count"] == expected_seq - 1, (what, result)
        if expected_kind:
            assert result["why"].startswith(expected_kind), (what, result)
        shutil.rmtree(copy.root)
    assert kinds == {"_edit", "_delete", "_swap", "_resign"}


def test_a_cut_off_tail_with_a_forged_head_is_caught_by_the_written_down_head(pristine, tmp_path, capsys):
    home, _ = pristine
    copy = _copy(home, tmp_path / "copy")
    _, before = _verify(copy, capsys)
    written_down = before["head"][:16]
    con = _open(copy)
    rows = _rows(con)
    con.execute("DELETE FROM audit_log WHERE id = ?", (rows[-1]["id"],))
    con.execute("UPDATE audit_head SET count = ?, head_hash = ?", (rows[-2]["seq"], rows[-2]["hash"]))
    con.commit()
    # The last entry's effect (a policy row) is still in the tables: reconciling names it.
    code, result = _verify(copy, capsys)
    assert code == 1 and [r for r in result["rows"] if "no signed entry set it" in r] == result["rows"] != []
    # A careful forger removes the effect too; within the file the forgery is then
    # consistent, and only a copy of the head kept elsewhere shows it.
    con.execute("DELETE FROM retention_policy WHERE audit_id = ?", (rows[-1]["seq"],))
    con.commit()
    con.close()
    assert _verify(copy, capsys)[0] == 0
    code, result = _verify(copy, capsys, "--head", written_down)
    assert code == 1 and result["why"].startswith("removed") and written_down in result["why"]
    # an older head written down earlier is still part of the longer log
    assert _verify(copy, capsys, "--head", rows[3]["hash"])[0] == 0
    assert cli(copy, "audit", "verify", "--head", "12") == 2  # too short to mean anything


def test_the_log_refuses_edits_and_signing_on_a_broken_tail(pristine, tmp_path):
    home, signers = pristine
    copy = _copy(home, tmp_path / "copy")
    con = sqlite3.connect(copy.db)
    for sql in ("UPDATE audit_log SET reason = 'x' WHERE seq = 1", "DELETE FROM audit_log WHERE seq = 17"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            con.execute(sql)
    con.close()
    con = _open(copy)
    con.execute("DELETE FROM audit_log WHERE seq = 17")
    con.commit()
    con.close()
    with Receiver(str(copy.db)) as r:
        with pytest.raises(ActionError, match="audit verify"):
            audit.append(r, signers["alice"], "retention.set", "retention", "x", {})
        assert audit.head(r).count == 17


def test_an_entry_signed_after_its_key_was_retired_is_flagged(pristine, tmp_path):
    home, signers = pristine
    copy = _copy(home, tmp_path / "copy")
    with Receiver(str(copy.db)) as r:
        at = audit.entries(r)[-1]["at"]
        retire(r, "bob", signers["alice"], "left the team", now=at + 10)
        # the retired key holder forges an entry below the signing commands
        audit.append(r, signers["bob"], "retention.set", "retention", "late", {}, now=at + 20)
        result = audit.verify(r)
        assert (result.ok, result.first_bad_seq) == (False, 19)
        assert result.why.startswith("retired: bob was retired by entry #18")


def test_a_changed_operator_registry_is_caught(pristine, tmp_path):
    """The chain is checked with the keys the log registered; a swapped key in the table is named by
    reconciling (and signs nothing that verifies)."""
    home, _ = pristine
    for column, value in (("fingerprint", "f" * 64), ("public_key", "ab" * 32)):
        copy = _copy(home, tmp_path / column)
        with Receiver(str(copy.db)) as r:
            O = audit_models(r.db).Operator
            O.update({column: value}).where(O.name == "bob").execute()
            result = audit.verify(r)
            assert (result.ok, result.count, result.first_bad_seq) == (False, 17, None), result
            [row] = result.rows
            assert row.startswith(f"operator bob: {column} is {value[:40]}") and "entry #2 signed" in row, row


def test_triggers_are_what_the_migration_installs(pristine, tmp_path):
    """The store the migrations built holds exactly the triggers the code generates, and each
    refuses what it names with the append-only message, leaving the log as it was."""
    home, _ = pristine
    copy = _copy(home, tmp_path / "copy")
    con = sqlite3.connect(copy.db)
    installed = dict(con.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit_log'"))
    generated = {sql.split()[5]: sql for sql in append_only_sqlite("audit_log", APPEND_ONLY)}
    assert set(installed) == set(generated) == {"audit_log_no_update", "audit_log_no_delete"}
    before = _rows(con)
    refused = {"audit_log_no_update": "UPDATE audit_log SET reason = 'x', hash = 'y'",
               "audit_log_no_delete": "DELETE FROM audit_log"}
    for name, sql in refused.items():
        with pytest.raises(sqlite3.IntegrityError) as caught:
            con.execute(sql)
        assert str(caught.value) == APPEND_ONLY, name
    assert _rows(con) == before and len(before) == 17
    con.close()


def test_hostile_values_in_a_tampered_log_are_reported_escaped(pristine, tmp_path, capsys, monkeypatch):
    home, _ = pristine
    monkeypatch.setenv("COLUMNS", "200")  # no wrapping inside the values looked for
    copy = _copy(home, tmp_path / "copy")
    con = _open(copy)
    con.execute("UPDATE audit_log SET operator = ?, at = ? WHERE seq = 2", ("\x1b[31mmallory\x07", "not a time"))
    con.commit()
    con.close()
    capsys.readouterr()
    assert cli(copy, "audit", "verify") == 1
    out = capsys.readouterr().out
    assert "BAD at entry #2" in out and "\x1b" not in out and "\x07" not in out
    assert cli(copy, "audit", "show") == 0
    out = capsys.readouterr().out
    assert "\\x1b[31mmallory\\x07" in out and "\x1b" not in out and "\x07" not in out
    assert cli(copy, "audit", "show", "--json") == 0
    shown = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert shown[-2]["at"] == "not a time" and shown[-2]["operator"] == "\x1b[31mmallory\x07"


def test_entries_page_through_the_log(pristine, tmp_path):
    home, _ = pristine
    copy = _copy(home, tmp_path / "copy")
    with Receiver(str(copy.db)) as r:
        assert [e["seq"] for e in audit.entries(r)] == list(range(1, 18))
        assert [e["seq"] for e in audit.entries(r, offset=15)] == [16, 17]
        assert [e["seq"] for e in audit.entries(r, limit=3, offset=1, newest_first=True)] == [16, 15, 14]
        assert audit.entries(r, limit=1)[0]["payload"]["name"] == "alice"
        assert audit.entries(r, limit=1, offset=3)[0]["payload"]["decision"] == "keep_first"
