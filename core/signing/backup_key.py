"""The home's backup key as the signed log records it: an admin's ``backup.key`` entry.

A backup's manifest is signed by the home's own backup key, whose private half never leaves
the home (``core.backup.origin``). Its public half counts as the home's only once an admin has
signed it into the log: from then on every checkpoint line carries its fingerprint, so a
backup can be proven this home's on a machine that holds nothing else of it. The entry writes
no table; the log is the record (a later entry replaces the key in force, earlier keys stay
trusted for the backups they signed). Signing the entry is ``backup_record``; this module is
what ``audit verify`` and the checkpoint read, so it imports no signing.
"""

from __future__ import annotations

import json

from .keys import fingerprint

ACTION = "backup.key"
TARGET = "backup"


def _key_of(payload) -> str | None:
    """The fingerprint a ``backup.key`` payload records, when it is well formed."""
    if not isinstance(payload, dict):
        return None
    pub, fp = payload.get("public_key"), payload.get("fingerprint")
    try:
        if isinstance(pub, str) and isinstance(fp, str) and fingerprint(bytes.fromhex(pub)) == fp and len(pub) == 64:
            return fp
    except ValueError:
        return None
    return None


def in_force(rows) -> str | None:
    """The backup key the last well-formed ``backup.key`` entry of ``rows`` (stored rows, in
    order) recorded, or None."""
    found = None
    for row in rows:
        if row.action != ACTION:
            continue
        try:
            fp = _key_of(json.loads(row.payload))
        except (TypeError, ValueError):
            continue
        found = fp or found
    return found


def recorded(db) -> list[str]:
    """Every backup key fingerprint the stored log recorded, the one in force last."""
    out = []
    for (raw,) in db.execute_sql(f"SELECT payload FROM audit_log WHERE action = {db.param} ORDER BY id",
                                 (ACTION,)).fetchall():
        try:
            fp = _key_of(json.loads(raw))
        except (TypeError, ValueError):
            continue
        if fp:
            out = [k for k in out if k != fp] + [fp]
    return out
