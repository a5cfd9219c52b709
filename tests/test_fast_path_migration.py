"""Migration 22: a store whose counters and totals have no writer slot keeps every count.

The store is made, its three counted tables put back in their shape before
the migration (one row per key) with counts in them, the migration's row
removed; opening it again must move those counts to slot 0, and an ingest
then adds to them.
"""

from core import Receiver
from tests.support.helpers import frame

T0 = 1_700_000_000

OLD_SHAPE = {
    "counters": 'CREATE TABLE counters ("source" TEXT NOT NULL, "outcome" TEXT NOT NULL, "count" BIGINT NOT NULL, '
                'PRIMARY KEY ("source", "outcome"))',
    "arrival_minutes": 'CREATE TABLE arrival_minutes ("minute" INTEGER NOT NULL, "source" TEXT NOT NULL, '
                       '"count" BIGINT NOT NULL, PRIMARY KEY ("minute", "source"))',
    "totals": 'CREATE TABLE totals ("name" TEXT NOT NULL PRIMARY KEY, "value" BIGINT NOT NULL)',
}

# The old shape's columns, in its order.
KEPT = {"counters": ["source", "outcome", "count"], "arrival_minutes": ["minute", "source", "count"],
        "totals": ["name", "value"]}


def test_counts_survive_the_writer_slot_migration(new_store):
    target = new_store()
    with Receiver(target) as r:
        r.ingest_many([("a-1", frame(1, "S1", "MED", 3, 50)), ("a-1", frame(1, "S1", "MED", 3, 50))],
                      now=T0, source="cli")
        before = r.totals(), r.per_source(), r.arrivals_per_minute(minutes=2, now=T0)
        db = r.db
        saved = {t: db.execute_sql(f"SELECT {', '.join(KEPT[t])} FROM {t}").fetchall() for t in OLD_SHAPE}
        assert all(saved.values())
        with db.atomic():
            for table, ddl in OLD_SHAPE.items():
                db.execute_sql(f"DROP TABLE {table}")
                db.execute_sql(ddl)
                for row in saved[table]:
                    db.execute_sql(f"INSERT INTO {table} VALUES ({', '.join([db.param] * len(row))})", row)
            db.execute_sql("DELETE FROM schema_version WHERE version = 22")
        assert "slot" not in {c.name for c in db.get_columns("totals")}
    with Receiver(target) as r:
        assert "slot" in {c.name for c in r.db.get_columns("totals")}
        assert (r.totals(), r.per_source(), r.arrivals_per_minute(minutes=2, now=T0)) == before
        r.ingest_many([("b-1", frame(1, "S2", "WAT", 4, 51))], now=T0, source="cli")
        after = r.totals()
    assert after.cases == before[0].cases + 1 == 2
    assert after.frames == before[0].frames + 1 == 3
    assert after.headcount_total == 7


def _indexes(db) -> set[str]:
    if db.dialect == "postgresql":
        return {n for (n,) in db.execute_sql("SELECT indexname FROM pg_indexes WHERE tablename = 'cases'").fetchall()}
    return {n for (n,) in db.execute_sql("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'cases'")}


def test_the_full_rank_index_goes_and_every_ranking_stays(new_store):
    """Migration 23: a store made before it has two rank indexes; opened again, it keeps the
    partial one only, and both rankings (open cases, and every case) are as they were."""
    target = new_store()
    items = [(f"r{i}-1", frame(1, f"S{i % 3}", "MED", 1 + i % 4, (i * 37) % 100)) for i in range(40)]
    with Receiver(target) as r:
        r.ingest_many(items, now=T0, source="cli")
        r.db.execute_sql("UPDATE cases SET status = 'done' WHERE MOD(id, 3) = 0")
        before = r.ranking(limit=100), r.ranking(limit=100, include_done=True)
        with r.db.atomic():
            r.db.execute_sql("CREATE INDEX cases_pri_headcount_first_seen ON cases (pri, headcount, first_seen)")
            r.db.execute_sql("DELETE FROM schema_version WHERE version = 23")
        assert "cases_pri_headcount_first_seen" in _indexes(r.db)
    with Receiver(target) as r:
        assert "cases_pri_headcount_first_seen" not in _indexes(r.db)
        assert "cases_ranked" in _indexes(r.db)
        assert (r.ranking(limit=100), r.ranking(limit=100, include_done=True)) == before
    assert len(before[0]) == 27 and len(before[1]) == 40


def test_the_ranking_walks_its_partial_index(tmp_path):
    """The dispatch order is read from ``cases_ranked`` in index order (only the ties of one pri and
    headcount are sorted), never by sorting every case: the console's main view stays instant
    however many cases a store holds (SQLite's plan; PostgreSQL plans by size)."""
    with Receiver(str(tmp_path / "plan.db")) as r:
        C = r.m.Case
        sql, params = r._ranking_query((C.id, C.pri), include_done=False).limit(100).sql()
        plan = " | ".join(row[-1] for row in r.db.execute_sql("EXPLAIN QUERY PLAN " + sql, params).fetchall())
    assert "USING INDEX cases_ranked" in plan and "TEMP B-TREE FOR ORDER BY" not in plan, plan
