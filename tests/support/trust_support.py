"""A signed store story on either backend, and the tools of a forger who can write the store
but holds no operator's key: raw SQL, triggers off and on, re-signing with keys of
their own."""

from __future__ import annotations

import json

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from console.cli import main
from core import Receiver
from core.signing import audit
from core.signing.audit_models import APPEND_ONLY
from core.signing.keys import Signer, fingerprint, key_path, unwrap
from core.signing.operators import add_payload
from core.store.backend import PostgresStore

from .helpers import frame
from .signing import A1, A1_FIX, B1_FIX, B2, C1, EVERY_ROLE, PASSPHRASES, passfile
from .cli import Ran, run_cli

B7 = ("B-7", frame(7, "Dadaab", "WAT", 14, 90))  # the correction's values under another id
C2 = ("C-2", frame(2, "Ifo", "SHE", 9, 80))  # stays open


def cli(home, target, *argv: str) -> int:
    return main(["--home", str(home.root), "--db", target, *argv])


def run(home, target, *argv: str, stdin: str | None = None) -> Ran:
    """The command with what it prints and its exit code, in this process (tests/support/cli.py)."""
    return run_cli("--home", str(home.root), "--db", target, *argv, input=stdin)


def signed(home, target, tmp_path, operator: str, *argv: str, reason: str = "checked with the site") -> int:
    return cli(home, target, *argv, "--operator", operator, "--reason", reason,
               "--passphrase-file", passfile(tmp_path, operator))


def add(home, target, tmp_path, name: str, approver: str | None = None) -> None:
    argv = ["operator", "add", name, "--passphrase-file", passfile(tmp_path, name)]
    if approver:
        argv += ["--operator", approver, "--operator-passphrase-file", passfile(tmp_path, approver), *EVERY_ROLE]
    assert cli(home, target, *argv) == 0


def qid(target, item) -> int:
    with Receiver(target) as r:
        return next(q.id for q in r.quarantine(status=None, limit=100) if (q.frame_id, q.frame_text) == item)


def story(home, target, tmp_path, retire_carol: bool = True) -> None:
    """Three operators, a kept first, an accepted correction that also settles a copy, one
    conflict left open, two policy changes, and (by default) carol retired."""
    add(home, target, tmp_path, "alice")
    add(home, target, tmp_path, "bob", "alice")
    add(home, target, tmp_path, "carol", "alice")
    feed = tmp_path / "feed.txt"
    feed.write_text("".join(f"{fid} {text}\n" for fid, text in [A1, B2, C1, A1_FIX, B1_FIX, B7, C2]))
    assert cli(home, target, "ingest", str(feed)) == 0
    assert signed(home, target, tmp_path, "bob", "resolve", str(qid(target, A1_FIX)), "--keep-first") == 0
    assert signed(home, target, tmp_path, "carol", "resolve", str(qid(target, B1_FIX)), "--accept-correction") == 0
    assert signed(home, target, tmp_path, "alice", "retention", "set", "10", reason="disk nearly full") == 0
    assert signed(home, target, tmp_path, "bob", "retention", "set", "40", reason="back to normal") == 0
    if retire_carol:
        assert signed(home, target, tmp_path, "alice", "operator", "retire", "carol", reason="left") == 0


# -- the forger ---------------------------------------------------------------------
def sql(r: Receiver, statement: str, params=()) -> list:
    cursor = r.db.execute_sql(statement.replace("?", r.db.param), params)
    return cursor.fetchall() if cursor.description else []


def triggers_off(r: Receiver) -> None:
    if isinstance(r.db, PostgresStore):
        sql(r, "ALTER TABLE audit_log DISABLE TRIGGER ALL")
        sql(r, "ALTER TABLE audit_head DISABLE TRIGGER ALL")
    else:
        sql(r, "DROP TRIGGER audit_log_no_update")
        sql(r, "DROP TRIGGER audit_log_no_delete")


def triggers_on(r: Receiver) -> None:
    if isinstance(r.db, PostgresStore):
        sql(r, "ALTER TABLE audit_log ENABLE TRIGGER ALL")
        sql(r, "ALTER TABLE audit_head ENABLE TRIGGER ALL")
    else:
        for statement in r.db.append_only_sql("audit_log", APPEND_ONLY):
            sql(r, statement)


COLUMNS = ["seq", "action", "target", "reason", "operator", "key", "at", "prev_hash", "payload",
           "signature", "hash"]


def log_rows(r: Receiver) -> list[dict]:
    return [dict(zip(COLUMNS, row)) for row in sql(r, f"SELECT {', '.join(COLUMNS)} FROM audit_log ORDER BY id")]


def write_entry(r: Receiver, signer: Signer, fields: dict) -> dict:
    """Sign ``fields`` (any time, any place) and store the entry as the last one, head included."""
    fields = {k: v for k, v in fields.items() if k != "v"}
    msg = audit.message(audit.signed_fields(**fields))
    signature = signer.sign(msg).hex()
    row = {**fields, "signature": signature, "hash": audit.entry_hash(msg, signature)}
    sql(r, f"INSERT INTO audit_log ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
        [row[c] for c in COLUMNS])
    sql(r, "UPDATE audit_head SET count = ?, head_hash = ?", (row["seq"], row["hash"]))
    return row


def backdated_entry(r: Receiver, signer: Signer, at: float) -> dict:
    """Append a retention entry signed with a real key but dated as the forger likes."""
    head = audit.head(r)
    return write_entry(r, signer, audit.signed_fields(
        head.count + 1, "retention.set", "retention", "late entry", signer.name, signer.fingerprint, at, head.hash,
        audit.canonical_json({"from_seconds": 40 * 86400, "to_seconds": 5 * 86400, "exception": True})))


def rewrite_with_new_keys(r: Receiver, flip_keep_first: bool) -> dict[str, Signer]:
    """Attack 1: new keys for every operator, the whole chain re-signed with them, the registry
    and head fixed up, triggers restored. Optionally a keep_first becomes an accept_correction."""
    rows = log_rows(r)
    names = sorted({row["operator"] for row in rows} | {json.loads(row["payload"]).get("name") for row in rows
                                                         if row["action"] == "operator.add"})
    keys = {n: Ed25519PrivateKey.generate() for n in names}
    signers = {n: Signer(n, fingerprint(_raw(k)), k) for n, k in keys.items()}
    triggers_off(r)
    sql(r, "DELETE FROM audit_log")
    prev = audit.GENESIS
    for pos, row in enumerate(rows, start=1):
        payload = json.loads(row["payload"])
        action = row["action"]
        if action == "operator.add":
            payload = add_payload(pos, prev, payload["name"], keys[payload["name"]], row["operator"])
        if action == "operator.retire":
            payload["fingerprint"] = signers[payload["name"]].fingerprint
        if flip_keep_first and action == "resolve.keep_first":
            action, payload["decision"] = "resolve.accept_correction", "accept_correction"
            flip_keep_first = False
        signer = signers[row["operator"]]
        fields = {**{k: row[k] for k in COLUMNS if k not in ("signature", "hash")}, "action": action,
                  "key": signer.fingerprint, "prev_hash": prev, "payload": audit.canonical_json(payload)}
        prev = write_entry(r, signer, fields)["hash"]
    for name, signer in signers.items():
        sql(r, "UPDATE operators SET public_key = ?, fingerprint = ? WHERE name = ?",
            (_raw(keys[name]).hex(), signer.fingerprint, name))
    triggers_on(r)
    return signers


def _raw(key: Ed25519PrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def unlock(home, name: str) -> Signer:
    """An operator's key as its holder has it, retired or not (the key file and the passphrase)."""
    key = unwrap(key_path(home, name).read_bytes(), name, PASSPHRASES[name])
    return Signer(name, fingerprint(_raw(key)), key)
