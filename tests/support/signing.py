"""Helpers for the operator, signed-action and audit tests: CLI calls and store snapshots."""

from __future__ import annotations

import json
from pathlib import Path

from console.cli import main
from core import Receiver
from core.signing.audit_models import audit_models
from core.signing.operators import list_operators

from .helpers import frame

PASSPHRASES = {"alice": "alice passphrase", "bob": "bob passphrase", "carol": "carol passphrase"}
PASS = PASSPHRASES["alice"]  # the operator most tests sign as

# Case A: a same-id correction (headcount 3 -> 7). Case B: a re-ranked copy with
# different values (WAT 12 -> 14, pri 70 -> 90).
A1 = ("A-1", frame(1, "Kakuma1", "MED", 3, 86))
A1_FIX = ("A-1", frame(1, "Kakuma1", "MED", 7, 86))  # trailer #0a
B2 = ("B-2", frame(2, "Dadaab", "WAT", 12, 70))
B1_FIX = ("B-1", frame(1, "Dadaab", "WAT", 14, 90))
C1 = ("C-1", frame(1, "Ifo", "SHE", 8, 80))


# After the first operator, `operator add` names the roles; these helpers give every one.
EVERY_ROLE = ("--role", "admin", "--role", "resolver", "--role", "dispatcher")


def cli(home, *argv: str) -> int:
    return main(["--home", str(home.root), *argv])


def passfile(tmp_path: Path, name: str, text: str | None = None) -> str:
    path = tmp_path / f"{name}.pass"
    path.write_text((PASSPHRASES.get(name, "unknown passphrase") if text is None else text) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return str(path)


def add_operators(home, tmp_path, *names: str, approver: str | None = None) -> None:
    """Add operators through the CLI: the store's first signs its own entry, the others are approved
    by ``approver`` (default: the first name given, or alice)."""
    with Receiver(str(home.db)) as r:
        empty = not list_operators(r)
    approver = approver or (names[0] if empty else "alice")
    for i, name in enumerate(names):
        argv = ["operator", "add", name, "--passphrase-file", passfile(tmp_path, name)]
        if i or not empty:
            argv += ["--operator", approver, "--operator-passphrase-file", passfile(tmp_path, approver), *EVERY_ROLE]
        assert cli(home, *argv) == 0, argv


def ingest(home, tmp_path, items, name="frames.txt") -> None:
    path = tmp_path / name
    path.write_text("".join(f"{fid} {text}\n" for fid, text in items), encoding="utf-8")
    assert cli(home, "ingest", str(path)) == 0


def sign(home, tmp_path, *argv: str, operator="alice", reason="checked with the site",
         passphrase: str | None = None) -> int:
    pf = passfile(tmp_path, operator, passphrase)
    extra = ["--operator", operator, "--passphrase-file", pf]
    if reason is not None:
        extra += ["--reason", reason]
    return cli(home, *argv, *extra)


def snapshot(home) -> dict:
    """Everything a signed action may touch, as plain comparable data."""
    with Receiver(str(home.db)) as r:
        m, a = r.m, audit_models(r.db)

        def rows(model, order):
            return [dict(x) for x in model.select().order_by(order).dicts()]

        return {
            "cases": rows(m.Case, m.Case.id),
            "history": rows(m.CaseHistory, m.CaseHistory.id),
            "quarantine": rows(m.Quarantine, m.Quarantine.id),
            "settlements": rows(m.Settlement, m.Settlement.id),
            "totals": {t.name: t.value for t in m.Total.select()},
            "policy": rows(m.Policy, m.Policy.id),
            "audit": rows(a.AuditEntry, a.AuditEntry.id),
            "head": rows(a.AuditHead, a.AuditHead.id),
            "operators": rows(a.Operator, a.Operator.id),
            "ranking": [(c.frame_id, c.headcount, c.pri) for c in r.ranking()],
        }


def quarantine_id(home, frame_id: str, text: str) -> int:
    with Receiver(str(home.db)) as r:
        for q in r.quarantine(status=None, limit=1000):
            if q.frame_id == frame_id and q.frame_text == text:
                return q.id
    raise AssertionError(f"{frame_id} {text} is not in quarantine")


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
