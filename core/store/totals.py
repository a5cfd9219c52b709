"""Adding to counters and totals: the one upsert-increment every writer of a count uses.

The ingest's per-source counters, arrivals per minute and running totals, an
accepted correction's headcount change and a status mark's count per status
all add ``n`` to a keyed row, inserting it when missing; written once here so
the conflict clause and the quoting are the same for all of them.
"""

from __future__ import annotations

from typing import Iterable, Sequence


def add_counts(db, model, key_fields: Sequence[str], value_field: str, rows: list) -> None:
    """Upsert-increment: ``value += n`` per key, inserting missing keys (rows are ``(*keys, n)``).

    A counted table with a ``slot`` column keeps one row per key and writer
    (``db.writer_slot()``): concurrent receivers never update the same row, and
    readers sum over the slots. Keys are written in sorted order, so two writers
    that do share a row lock their rows in one order (no deadlock).
    """
    if not rows:
        return
    meta = model._meta
    q = db.quoted
    if "slot" in meta.fields:
        slot = db.writer_slot()
        key_fields = (*key_fields, "slot")
        rows = [(*row[:-1], slot, row[-1]) for row in rows]
    rows = sorted(rows, key=lambda row: row[:-1])
    table, value = q(meta.table_name), q(meta.fields[value_field].column_name)
    keys = ", ".join(q(meta.fields[k].column_name) for k in key_fields)
    conflict = f"ON CONFLICT ({keys}) DO UPDATE SET {value} = {table}.{value} + excluded.{value}"
    columns = [meta.fields[f].column_name for f in (*key_fields, value_field)]
    db.insert_rows(meta.table_name, columns, rows, conflict)


def bump_total(db, m, deltas: Iterable[tuple[str, int]]) -> None:
    """Add each ``(name, delta)`` to the ``totals`` row of that name; a zero delta writes nothing."""
    add_counts(db, m.Total, ["name"], "value", [(name, delta) for name, delta in deltas if delta])
