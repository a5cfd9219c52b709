"""Schema version 3 (operators and the audit log) reaches old stores, and gaps are filled later."""

from __future__ import annotations

import sqlite3

import pytest

from core.store import migrations as store
from core import StoreError


def _versions(path) -> list[int]:
    con = sqlite3.connect(path)
    try:
        return [v for (v,) in con.execute("SELECT version FROM schema_version ORDER BY version")]
    finally:
        con.close()


def _tables(path) -> set[str]:
    con = sqlite3.connect(path)
    try:
        return {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')")}
    finally:
        con.close()


def test_a_version_1_store_gains_the_audit_tables(store_path, monkeypatch):
    monkeypatch.setattr(store, "MIGRATIONS", store.MIGRATIONS[:1])
    db, _ = store.connect(store_path)
    db.close()
    assert _versions(store_path) == [1] and "audit_log" not in _tables(store_path)
    monkeypatch.undo()
    db, _ = store.connect(store_path)
    db.close()
    assert _versions(store_path) == [version for version, _what, _step in store.MIGRATIONS]
    assert {"operators", "audit_log", "audit_head", "audit_log_no_update", "audit_log_no_delete"} <= _tables(store_path)


def test_a_step_numbered_below_the_highest_is_still_applied_once(store_path, monkeypatch):
    """A store made at {1, 3} meets a program that also knows 2 (another branch merged)."""
    v1, _v2, v3 = store.MIGRATIONS[:3]
    monkeypatch.setattr(store, "MIGRATIONS", [v1, v3])
    db, _ = store.connect(store_path)
    db.close()
    assert _versions(store_path) == [1, 3]
    ran = []

    def v2(db, m):
        ran.append(2)
        db.execute_sql("CREATE TABLE merged_later (x INTEGER)")

    monkeypatch.setattr(store, "MIGRATIONS", [v1, (2, "from another branch", v2), v3])
    for _ in range(2):
        db, _ = store.connect(store_path)
        db.close()
    assert ran == [2] and _versions(store_path) == [1, 2, 3]
    assert "merged_later" in _tables(store_path)


def test_a_store_newer_than_the_program_is_refused(store_path):
    db, _ = store.connect(store_path)
    db.close()
    con = sqlite3.connect(store_path)
    con.execute("INSERT INTO schema_version (version, applied_at) VALUES (99, 0)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="version 99"):
        store.connect(store_path)
