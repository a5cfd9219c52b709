"""Property: any single SQL change to a row of the signed state is named by `audit verify`.

The signed state: resolved and open quarantine rows (status, resolver, time),
case values and versions, the case history, settled versions, retention policy
rows and operator rows. One column of one row gets another value of its type;
verify must then fail and name that very row.
"""

from __future__ import annotations

import math
import shutil
import sqlite3

import pytest
from hypothesis import given, reject
from hypothesis import strategies as st

from core import Receiver
from core.signing import audit
from core.home import Home

from .support.hypothesis_settings import examples
from .support.trust_support import story

# table -> (how verify names a row, {column: kind})
SIGNED = {
    "quarantine": ("quarantine #{id}", {"status": "status", "resolved_by": "name", "resolved_at": "time"}),
    "cases": ("case #{id}", {"frame_text": "frame", "seq": "int", "site": "text", "need": "text",
                             "headcount": "int", "pri": "int", "version": "int"}),
    "case_history": ("case history #{id}", {"frame_id": "text", "frame_text": "frame", "site": "text",
                                            "need": "text", "headcount": "int", "pri": "int",
                                            "replaced_at": "time", "quarantine_id": "int", "case_id": "int"}),
    "settlements": ("settlement #{id}", {"case_key": "text", "frame_text": "frame", "payload": "text",
                                         "quarantine_id": "int"}),
    "retention_policy": ("retention policy #{id}", {"retention_seconds": "int", "set_at": "time",
                                                    "set_by": "name", "reason": "text", "is_exception": "bool",
                                                    "audit_id": "int"}),
    "operators": ("operator {name}", {"name": "name", "public_key": "hex", "fingerprint": "hex",
                                      "added_at": "time", "retired_at": "time"}),
}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("property")
    home = Home(tmp / "home").ensure()
    story(home, str(home.db), tmp)
    with Receiver(str(home.db)) as r:
        assert audit.verify(r).ok
    con = sqlite3.connect(home.db)
    rows = {t: [dict(zip([c[0] for c in cur.description], v)) for v in cur.fetchall()]
            for t in SIGNED for cur in [con.execute(f"SELECT * FROM {t} ORDER BY id")]}
    con.close()
    assert all(rows[t] for t in SIGNED)
    return home, rows


def _value(kind: str):
    return {
        "status": st.sampled_from(["open", "kept_first", "accepted_correction", "settled", "dismissed"]),
        "name": st.one_of(st.none(), st.sampled_from(["alice", "bob", "carol", "mallory"])),
        "time": st.one_of(st.none(), st.floats(0, 2e9, allow_nan=False)),
        "int": st.integers(-5, 10**7),
        "bool": st.booleans(),
        "text": st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
        "frame": st.from_regex(r"H1\|[0-9]{1,2}\|[A-Za-z]{1,6}\|[A-Z]{3}\|[0-9]{1,3}\|[0-9]{1,2}\|#[0-9a-f]{2}",
                               fullmatch=True),
        "hex": st.text("0123456789abcdef", min_size=64, max_size=64),
    }[kind]


def _same(old, new) -> bool:
    if isinstance(old, float) and isinstance(new, (int, float)) and not isinstance(new, bool):
        return math.isclose(old, new, rel_tol=0, abs_tol=0)
    return old == new or (isinstance(old, int) and isinstance(new, bool) and old == int(new))


@examples(100, fuzz=2000)
@given(data=st.data())
def test_any_single_change_to_a_signed_row_is_named(base, tmp_path_factory, data):
    home, rows = base
    table = data.draw(st.sampled_from(sorted(SIGNED)), label="table")
    label, columns = SIGNED[table]
    row = data.draw(st.sampled_from(rows[table]), label="row")
    column = data.draw(st.sampled_from(sorted(columns)), label="column")
    new = data.draw(_value(columns[column]).filter(lambda v: not _same(row[column], v)), label="value")
    copy = Home(tmp_path_factory.mktemp("copy") / "home").ensure()
    shutil.copyfile(home.db, copy.db)
    con = sqlite3.connect(copy.db)
    try:
        con.execute(f"UPDATE {table} SET {column} = ? WHERE id = ?", (new, row["id"]))
        con.commit()
    except sqlite3.IntegrityError:  # NOT NULL or UNIQUE: the store itself refuses this change
        reject()
    finally:
        con.close()
    with Receiver(str(copy.db)) as r:
        result = audit.verify(r)
    shutil.rmtree(copy.root)
    assert not result.ok, (table, column, new)
    names = {label.format(**row)}
    if table == "operators" and column == "name":
        names.add(f"operator {new}")
    assert any(line.startswith(tuple(names)) for line in result.rows), (table, column, new, result)
