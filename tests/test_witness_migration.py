"""Migration 26: an older store's dedup witnesses move into one b-tree each and keep every row.

The store is made and filled, its ``seen_frames`` put back in the shape it had
before (on SQLite a rowid table with its key's index beside it) and the
migration's row removed; opening it again must rebuild the table, keep every
witness and the eviction's ``first_seen`` index, and go on deduplicating and
evicting as before.
"""

from core import Receiver
from core.rules.retention import DAY
from tests.support.helpers import frame

T0 = 1_700_000_000

# ``seen_frames`` as stores before migration 26 made it (SQLite).
OLD_SHAPE = ('CREATE TABLE "seen_frames" ("frame_id" TEXT NOT NULL PRIMARY KEY, "frame_text" TEXT NOT NULL, '
             '"crc8" TEXT NOT NULL, "first_seen" REAL NOT NULL, "last_seen" REAL NOT NULL, '
             '"seen_count" INTEGER NOT NULL, "last_source" TEXT NOT NULL)')
COLUMNS = "frame_id, frame_text, crc8, first_seen, last_seen, seen_count, last_source"


def _witnesses(r: Receiver) -> list[tuple]:
    return [tuple(row) for row in r.db.execute_sql(f"SELECT {COLUMNS} FROM seen_frames ORDER BY frame_id")]


def _table_sql(r: Receiver) -> str:
    return r.db.execute_sql("SELECT sql FROM sqlite_master WHERE name = 'seen_frames'").fetchone()[0]


def _put_back_the_old_shape(r: Receiver) -> None:
    db = r.db
    rows = _witnesses(r)
    with db.atomic():
        if db.dialect == "sqlite":
            db.execute_sql("DROP TABLE seen_frames")
            db.execute_sql(OLD_SHAPE)
            db.execute_sql('CREATE INDEX "seen_frames_first_seen" ON "seen_frames" ("first_seen")')
            for row in rows:
                db.execute_sql(f"INSERT INTO seen_frames ({COLUMNS}) VALUES ({', '.join('?' * 7)})", row)
        db.execute_sql("DELETE FROM schema_version WHERE version = 26")


def test_an_older_store_keeps_every_witness_in_the_rebuilt_table(new_store):
    target = new_store()
    items = [(f"r{i}-1", frame(1, f"S{i % 3}", "MED", 1 + i % 5, i % 100)) for i in range(30)]
    with Receiver(target) as r:
        r.ingest_many(items + items[:7], now=T0, source="cli")
        r.ingest_many(items[:3], now=T0 + 60, source="watch")
        r.ingest_many([(f"n{i}-1", frame(1, "S9", "WAT", 2, 7)) for i in range(5)], now=T0 + 40 * DAY, source="cli")
        before, totals = _witnesses(r), r.totals()
        _put_back_the_old_shape(r)
        if r.db.dialect == "sqlite":
            assert "WITHOUT ROWID" not in _table_sql(r)
    with Receiver(target) as r:
        versions = {v for (v,) in r.db.execute_sql("SELECT version FROM schema_version")}
        assert 26 in versions
        if r.db.dialect == "sqlite":
            assert "WITHOUT ROWID" in _table_sql(r)
            indexes = {n for (n,) in r.db.execute_sql(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'seen_frames'")}
            assert "seen_frames_first_seen" in indexes
        assert _witnesses(r) == before and r.totals() == totals
        assert len(before) == 35 and {row[5] for row in before if row[0] in ("r0-1", "r1-1", "r2-1")} == {3}
        again = r.ingest_many([items[0], (f"r0-1", frame(1, "S0", "MED", 99, 0)), ("z-1", frame(1, "S1", "FOO", 4, 9))],
                              now=T0 + 41 * DAY, source="cli")
        assert [v.outcome.value for v in again] == ["DUPLICATE", "CONFLICT_QUARANTINED", "APPLIED"]
        assert r.evict(now=T0 + 41 * DAY, started_by="test") == 30  # the first day's witnesses, by first_seen
        assert [row[0] for row in _witnesses(r)] == sorted([f"n{i}-1" for i in range(5)] + ["z-1"])
