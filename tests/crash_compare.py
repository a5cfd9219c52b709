"""The crash harness's comparison of two homes: stores, archive, rejected folder and leftovers.

Nothing may differ between the clean run and the run with kills but what depends on when or in
which process a row was written (``VOLATILE``); the rest is compared as multisets, so a row
counted twice or missing shows as one.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections import Counter
from pathlib import Path

# Columns whose values depend on when or in which process a row was written.
VOLATILE = {"id", "ts", "claim", "first_seen", "last_seen", "updated_at", "claimed_at", "finished_at",
            "applied_at", "replaced_at", "resolved_at", "set_at", "ran_at", "event_id", "at"}
# Alerts tied to the ledger must be recorded exactly once however often the watcher dies; fault
# alerts belong to each process's life (a restarted watcher meets an unreadable file anew).
LEDGER_ALERTS = "WHERE kind IN ('conflict', 'file_rejected')"
DAY_FOLDER = re.compile(r"processed/\d{4}-\d{2}-\d{2}/")


def _rows(con: sqlite3.Connection, table: str) -> tuple[list[str], Counter]:
    columns = [row[1] for row in con.execute(f'PRAGMA table_info("{table}")')]
    keep = [c for c in columns if c not in VOLATILE and not (table == "arrival_minutes" and c == "minute")]
    rows: Counter = Counter()
    if table == "arrival_minutes":  # per minute depends on the clock; per path must not
        for source, count in con.execute("SELECT source, SUM(count) FROM arrival_minutes GROUP BY source"):
            rows[(source, count)] += 1
        return ["source", "sum(count)"], rows
    quoted = ", ".join(f'"{c}"' for c in keep)
    for row in con.execute(f'SELECT {quoted} FROM "{table}" {LEDGER_ALERTS if table == "alert_events" else ""}'):
        if table == "inbox_files":
            row = tuple(DAY_FOLDER.sub("processed/DAY/", v) if isinstance(v, str) else v for v in row)
        rows[row] += 1
    return keep, rows


def dump_store(db: Path) -> dict[str, tuple[list[str], Counter]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND name NOT LIKE 'sqlite_%' AND name != 'home_identity' "
                                            "ORDER BY name")]  # each store its own random id
        return {t: _rows(con, t) for t in tables}
    finally:
        con.close()


def integrity(db: Path) -> str:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def dump_files(home: Path) -> dict[str, Counter]:
    """Archive, rejected folder and leftovers as (name, content digest) multisets."""
    out: dict[str, Counter] = {"processed": Counter(), "rejected": Counter(), "left in inbox": Counter(),
                               "hidden or temporary": Counter()}
    for folder in ("processed", "rejected", "inbox"):
        for dirpath, dirs, files in os.walk(home / folder):
            for name in files:
                path = Path(dirpath) / name
                data = path.read_bytes()
                if name.endswith(".reason"):
                    data = re.sub(rb"rejected at: [^\n]*\n", b"", data)
                digest = hashlib.sha256(data).hexdigest()[:16]
                if name.startswith(".") or name.endswith((".part", ".tmp")):
                    out["hidden or temporary"][(str(path.relative_to(home)), digest)] += 1
                elif folder == "inbox":
                    out["left in inbox"][(str(path.relative_to(home)), digest)] += 1
                else:
                    out[folder][(name, digest)] += 1
    return out


def _show(row) -> str:
    text = repr(row)
    return text if len(text) <= 160 else text[:157] + "..."


def differences(clean_home: Path, crash_home: Path) -> list[str]:
    found = []
    clean, crash = dump_store(clean_home / "receiver.db"), dump_store(crash_home / "receiver.db")
    for table in sorted(set(clean) | set(crash)):
        if table not in clean or table not in crash:
            found.append(f"table {table} exists in only one store")
            continue
        cols, want = clean[table]
        _cols, got = crash[table]
        missing, extra = want - got, got - want
        if missing or extra:
            found.append(f"table {table} ({', '.join(cols)}): {sum(missing.values())} rows missing, "
                         f"{sum(extra.values())} extra after the kills"
                         + (f"; missing e.g. {_show(next(iter(missing)))}" if missing else "")
                         + (f"; extra e.g. {_show(next(iter(extra)))}" if extra else ""))
    clean_files, crash_files = dump_files(clean_home), dump_files(crash_home)
    for folder in clean_files:
        missing = clean_files[folder] - crash_files[folder]
        extra = crash_files[folder] - clean_files[folder]
        if missing or extra:
            found.append(f"{folder}: {sum(missing.values())} files missing, {sum(extra.values())} extra"
                         + (f"; missing e.g. {_show(next(iter(missing)))}" if missing else "")
                         + (f"; extra e.g. {_show(next(iter(extra)))}" if extra else ""))
    return found


def frame_counts(home: Path) -> Counter:
    con = sqlite3.connect(f"file:{home / 'receiver.db'}?mode=ro", uri=True, timeout=30)
    try:
        return Counter({outcome: n for outcome, n in
                        con.execute("SELECT outcome, SUM(count) FROM counters GROUP BY outcome")})
    finally:
        con.close()
