"""A relay that reuses message ids loses nothing, through a real ``watch --listen``: a post under an id
already taken is a webhook retry only when it carries what that id first carried; with other content
it is offered like a new message (its frame ids decide duplicate or conflict), counted ``reused_ids``,
and the answer names only frames that were offered. The same holds through the inbox spool, and for
a store whose message ids were taken before contents were kept."""

from __future__ import annotations

import json
import signal
import sqlite3

from core import Receiver
from tests.support.gateway_support import Listening, add_gateway, frames, gateway_counts, per_source, post
from tests.support.inbox_helpers import wait_for
from tests.support.signing import add_operators, cli

JSON = {"Content-Type": "application/json"}


def gen(msg_id: str, *pairs: tuple[str, str]) -> bytes:
    return json.dumps([{"id": msg_id, "frame_id": fid, "frame": text} for fid, text in pairs]).encode()


def answered(w, path: str, body: bytes) -> list[str]:
    status, _headers, data = post(w.base, path, body, JSON)
    assert status == 200, w.stderr()[-2000:]
    return json.loads(data)["frames"]


def ledger(home) -> set[str]:
    with Receiver(str(home.db)) as r:
        return {c.frame_id for c in r.cases(limit=1000)}


def test_a_reused_id_with_other_frames_is_offered_and_counted_apart(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    path = add_gateway(home, tmp_path, capsys, "relay", "generic")
    a, b, c = frames(3, "gena")
    w = Listening(home, tmp_path)
    try:
        assert answered(w, path, gen("m1", a)) == [a[0]]
        assert answered(w, path, gen("m1", b)) == [b[0]]  # the id again, other frames: offered
        assert b[0] in ledger(home)  # the answer named it, so it is in
        assert answered(w, path, gen("m1", a)) == [a[0]]  # what m1 first carried: a webhook retry
        # Judged against what the id first carried: the second content again is offered again
        # (the ledger counts it a duplicate).
        assert answered(w, path, gen("m1", b)) == [b[0]]
        # The id again with a frame id already taken, another payload: the frame id decides (a conflict).
        other = (a[0], c[1])
        assert answered(w, path, gen("m1", other)) == [a[0]]
        # Two messages under one id in one post: the second is a reused id too.
        assert answered(w, path, gen("m2", c, b)) == [c[0], b[0]]
    finally:
        assert w.signal(signal.SIGTERM) == 0
    assert ledger(home) == {a[0], b[0], c[0]}
    g = gateway_counts(home)["relay"]
    assert (g["posts"], g["messages"], g["webhook_retries"], g["reused_ids"]) == (6, 6, 1, 4)
    assert per_source(home)["gw_relay"] == {"APPLIED": 3, "CONFLICT_QUARANTINED": 1, "DUPLICATE": 2}
    capsys.readouterr()
    assert cli(home, "--json", "status") == 0
    status = json.loads(capsys.readouterr().out)["gateways"]["relay"]
    assert (status["webhook_retries"], status["reused_ids"]) == (1, 4)
    assert cli(home, "status") == 0
    assert "reused ids" in capsys.readouterr().out
    assert cli(home, "gateway", "list") == 0
    assert "reused ids" in capsys.readouterr().out


def test_through_the_spool_a_reused_id_is_taken_in_and_a_retry_is_not(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    path = add_gateway(home, tmp_path, capsys, "relay", "generic")
    a, b = frames(2, "spl")
    w = Listening(home, tmp_path)
    try:
        locker = sqlite3.connect(home.db, isolation_level=None, timeout=60)
        locker.execute("BEGIN EXCLUSIVE")  # held past the busy timeout: the posts are spooled
        try:
            assert answered(w, path, gen("m1", a)) == [a[0]]
            assert answered(w, path, gen("m1", b)) == [b[0]]
            assert answered(w, path, gen("m1", a)) == [a[0]]  # a retry of the first
        finally:
            locker.rollback()
            locker.close()
        wait_for(lambda: ledger(home) == {a[0], b[0]}, what="both spooled messages taken in")
        wait_for(lambda: not [p for p in home.inbox.rglob("gateway-*.jsonl") if p.is_file()],
                 what="the spooled files done")
    finally:
        assert w.signal(signal.SIGTERM) == 0
    g = gateway_counts(home)["relay"]
    assert (g["spooled"], g["messages"], g["webhook_retries"], g["reused_ids"]) == (3, 2, 1, 1)
    assert per_source(home)["gw_relay"] == {"APPLIED": 2}


def test_an_id_taken_before_contents_were_kept_is_offered_once_then_judged_by_content(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    path = add_gateway(home, tmp_path, capsys, "relay", "generic")
    a, b, c = frames(3, "old")
    w = Listening(home, tmp_path)
    try:
        assert answered(w, path, gen("m1", a)) == [a[0]]
    finally:
        assert w.signal(signal.SIGTERM) == 0
    # The store as it was before: no content column, and the step that adds it not applied.
    con = sqlite3.connect(home.db)
    with con:
        rows = con.execute("SELECT gateway, key, at FROM gateway_messages").fetchall()
        con.execute("DROP TABLE gateway_messages")
        con.execute('CREATE TABLE gateway_messages ("gateway" TEXT NOT NULL, "key" TEXT NOT NULL, '
                    '"at" REAL NOT NULL, PRIMARY KEY ("gateway", "key"))')
        con.executemany("INSERT INTO gateway_messages VALUES (?, ?, ?)", rows)
        con.execute("DELETE FROM schema_version WHERE version = 24")
    con.close()
    w = Listening(home, tmp_path)
    try:
        with sqlite3.connect(home.db) as con:
            assert con.execute("SELECT content FROM gateway_messages").fetchall() == [(None,)]
        assert answered(w, path, gen("m1", b)) == [b[0]]  # no content on record: offered
        assert answered(w, path, gen("m1", b)) == [b[0]]  # now kept: a retry
        assert answered(w, path, gen("m1", c)) == [c[0]]  # other content: a reused id
    finally:
        assert w.signal(signal.SIGTERM) == 0
    assert ledger(home) == {a[0], b[0], c[0]}
    g = gateway_counts(home)["relay"]
    assert (g["messages"], g["webhook_retries"], g["reused_ids"]) == (2, 2, 1)


def test_the_verdict_follows_what_the_id_first_carried():
    from core.rules.gateway_messages import NEW, RETRY, REUSED, UNKNOWN, UNKNOWN_CONTENT, content_key, judge
    from core.gateways.text import unreadable

    a, b = content_key([("a-1", "x")]), content_key([("a-1", "y")])
    assert content_key([(None, unreadable("x", "no_frame_id"))]) != content_key([(None, unreadable("x", "other"))])
    known: dict = {}
    assert [judge(known, "m1", a), judge(known, "m1", a), judge(known, "m1", b), judge(known, "m1", b)] == \
        [NEW, RETRY, REUSED, REUSED]
    known = {"m2": UNKNOWN}
    assert [judge(known, "m2", a), judge(known, "m2", a), judge(known, "m2", b)] == [UNKNOWN_CONTENT, RETRY, REUSED]
    assert judge(known, "m2", None) == RETRY  # a spooled line of before: judged by its key alone
    assert [v.offer for v in (NEW, RETRY, REUSED, UNKNOWN_CONTENT)] == [True, False, True, True]
