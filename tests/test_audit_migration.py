"""Schema version 3 (operators and the audit log) reaches old stores, and gaps are filled later."""

from __future__ import annotations

import sqlite3

import pytest

from core.store import migrations as store
from core import StoreError
from core.receiver import schema


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


def test_a_version_1_store_gains_the_audit_tables(store_path):
    db, _ = store.connect(store_path, steps=schema()[:1])
    db.close()
    assert _versions(store_path) == [1] and "audit_log" not in _tables(store_path)
    db, _ = store.connect(store_path, steps=schema())
    db.close()
    assert _versions(store_path) == [v for v, _what, _step in schema()]
    assert {"operators", "audit_log", "audit_head", "audit_log_no_update", "audit_log_no_delete"} <= _tables(store_path)


def test_a_step_numbered_below_the_highest_is_still_applied_once(store_path):
    """A store made at {1, 3} meets a program that also knows 2 (another branch merged)."""
    v1, _v2, v3, *_later = schema()
    db, _ = store.connect(store_path, steps=[v1, v3])
    db.close()
    assert _versions(store_path) == [1, 3]
    ran = []

    def v2(db, m):
        ran.append(2)
        db.execute_sql("CREATE TABLE merged_later (x INTEGER)")

    for _ in range(2):
        db, _ = store.connect(store_path, steps=[v1, (2, "from another branch", v2), v3])
        db.close()
    assert ran == [2] and _versions(store_path) == [1, 2, 3]
    assert "merged_later" in _tables(store_path)


def test_a_store_newer_than_the_program_is_refused(store_path):
    db, _ = store.connect(store_path, steps=schema())
    db.close()
    con = sqlite3.connect(store_path)
    con.execute("INSERT INTO schema_version (version, applied_at) VALUES (99, 0)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="version 99"):
        store.connect(store_path, steps=schema())


def test_each_package_declares_its_own_steps_and_the_receiver_hands_over_all_in_order(store_path):
    """Signing's steps are its own, the store's list holds none of them, and the whole schema the
    receiver hands the store is in number order with each number once; a list that is not is refused
    before anything is written."""
    from core.signing import migrations as signing

    ours = {v for v, _what, _step in store.MIGRATIONS}
    theirs = {v for v, _what, _step in signing.MIGRATIONS}
    assert theirs == {3, 4} and not ours & theirs
    numbers = [v for v, _what, _step in schema()]
    assert numbers == sorted(ours | theirs) and len(numbers) == len(set(numbers))
    v1, v2, *_later = schema()
    for bad in ([v2, v1], [v1, v1]):
        with pytest.raises(ValueError, match="number order"):
            store.connect(store_path, steps=bad)
    assert "cases" not in _tables(store_path)
