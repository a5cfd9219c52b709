"""Migration 22: a store whose counters and totals have no writer slot keeps every count.

The store is made, its three counted tables put back in their shape before
the migration (one row per key) with counts in them, the migration's row
removed; opening it again must move those counts to slot 0, and an ingest
then adds to them.
"""

from core import Receiver
from tests.helpers import frame

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
    assert after["cases"] == before[0]["cases"] + 1 == 2
    assert after["frames"] == before[0]["frames"] + 1 == 3
    assert after["headcount_total"] == 7
