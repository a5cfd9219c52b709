"""The home's id: made once with the store and kept in it, so a backup says which home it is of.

A random id, not a name: two homes never share one by chance, and a restored home keeps the
id of the home it was restored from (it is that home, continued). A store from before the id
existed gets one when it is next opened (migration 25).
"""

from __future__ import annotations

import secrets
import time

TABLE = "home_identity"


def migrate_v25(db, m) -> None:
    db.execute_sql(f'CREATE TABLE IF NOT EXISTS {TABLE} ("id" INTEGER NOT NULL PRIMARY KEY, '
                   '"home_id" TEXT NOT NULL, "made_at" DOUBLE PRECISION NOT NULL)')
    if not db.execute_sql(f"SELECT 1 FROM {TABLE} WHERE id = 1").fetchall():
        db.execute_sql(f"INSERT INTO {TABLE} (id, home_id, made_at) VALUES (1, {db.param}, {db.param})",
                       (secrets.token_hex(16), time.time()))


def home_id(db) -> str | None:
    """The store's home id, or None for a store that does not hold one."""
    try:
        row = db.execute_sql(f"SELECT home_id FROM {TABLE} WHERE id = 1").fetchone()
    except Exception:  # noqa: BLE001 - a store (or a backup's snapshot) from before the table
        return None
    return row[0] if row else None
