"""The store's reads hand out named records, and every ``--json`` line is what the table's row was.

The JSON lines of ``cases``, ``ranking``, ``quarantine``, ``rejects``, ``evictions`` and ``files`` are
``record.to_dict()``; their keys and their order must stay those the dicts of the rows had, so a
script reading them is never broken by the records. The reference here is the table itself.
"""

from __future__ import annotations

import json

import pytest

from core import Receiver
from core.store import records
from tests.support.cli import cli


def columns(model) -> list[str]:
    return [f.name for f in model._meta.sorted_fields]


@pytest.mark.parametrize("record,table,extra", [
    (records.Case, "Case", ["disputed"]),
    (records.Conflict, "Quarantine", ["ledger_frame_id", "ledger_text"]),
    (records.Reject, "Reject", []),
    (records.Activity, "Activity", []),
    (records.Eviction, "Eviction", []),
    (records.PolicyChange, "Policy", []),
])
def test_a_record_has_its_tables_columns_in_their_order(sample_home, record, table, extra):
    with Receiver(str(sample_home.db)) as r:
        assert list(record._fields) == columns(getattr(r.m, table)) + extra


def raw(r, model, order) -> list[dict]:
    return list(model.select().order_by(order).dicts())


def lines(home, *argv) -> list[str]:
    ran = cli(home, "--json", *argv)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.splitlines()


def dumped(row: dict) -> str:
    return json.dumps(row, default=str, ensure_ascii=True)


def test_json_lines_are_the_rows_as_stored(sample_home):
    with Receiver(str(sample_home.db)) as r:
        m = r.m
        open_keys = {q.case_key for q in m.Quarantine.select().where(m.Quarantine.status == "open")}
        cases = [{**c, "disputed": c["case_key"] in open_keys} for c in raw(r, m.Case, m.Case.id.desc())]
        rejects = raw(r, m.Reject, m.Reject.id.desc())
        evictions = raw(r, m.Eviction, m.Eviction.id.desc())
        ledger = {c["case_key"]: c for c in cases}
        conflicts = [{**q, "ledger_frame_id": ledger.get(q["case_key"], {}).get("frame_id"),
                      "ledger_text": ledger.get(q["case_key"], {}).get("frame_text")}
                     for q in raw(r, m.Quarantine, m.Quarantine.id.desc())]
    assert cases and rejects and evictions and conflicts  # the sample has each
    assert lines(sample_home, "cases", "--limit", "1000") == [dumped(c) for c in cases]
    assert lines(sample_home, "rejects") == [dumped(x) for x in rejects]
    assert lines(sample_home, "evictions") == [dumped(e) for e in evictions]
    assert lines(sample_home, "quarantine", "--all") == [dumped(q) for q in conflicts]
    ranked = [json.loads(line) for line in lines(sample_home, "ranking", "--all")]
    assert [list(row) for row in ranked] == [list(records.RankedCase._fields)] * len(cases)
    assert [row["rank"] for row in ranked] == list(range(1, len(cases) + 1))


def test_a_record_is_not_a_mapping():
    """A misspelt or dict-style read fails where it is written, not later on a screen."""
    w = records.Witnesses(kept=1, oldest=None, cutoff=0.0, due=0)
    with pytest.raises(TypeError):
        w["kept"]  # noqa: B018
    assert w.to_dict() == {"kept": 1, "oldest": None, "cutoff": 0.0, "due": 0}


def test_status_json_begins_with_the_totals_as_they_were(sample_home):
    with Receiver(str(sample_home.db)) as r:
        totals = r.totals()
    [line] = lines(sample_home, "status")
    status = json.loads(line)
    assert list(status)[:len(records.Totals._fields)] == list(records.Totals._fields)
    assert {k: status[k] for k in records.Totals._fields} == json.loads(dumped(totals.to_dict()))
