"""The fast ingest against the reference decision (``core.rules.batch.decide_batch``).

Two stores on one backend take the same random stream with the same batch
boundaries and clocks: one decides through the pure reference, the other
through the fast path ``ingest_many`` uses by default. Every verdict and every
table row must be equal, so the fast path cannot drift from the rules.
"""

import os

import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import strategies as st

from core import Receiver
from core.rules.batch import Facts, as_offers, decide_batch, needs_facts
from core.rules.decide import CaseRef, payload_from_key, payload_key
from core.rules.frame import Frame, Unreadable, parse
from core.rules.retention import DAY
from tests.support.helpers import bad_trailer, frame
from tests.support.hypothesis_settings import examples

T0 = 1_700_000_000
SITES = ["Kakuma1", "Dadaab1", "S9"]
NEEDS = ["MED", "SHE", "WAT", "FOO"]
HOWS = ["ok", "ok", "ok", "ok", "crc", "cut", "crlf", "upper", "mismatch", "nonascii", "toolong",
        "unreadable", "phone"]


def payload(record: int, variant: int):
    return (SITES[record % 3], NEEDS[record % 4], 1 + record * 3 + variant * 100, 50 + record)


def render(fid_base: str, record: int, seq: int, variant: int, how: str, rerankable: bool):
    site, need, hc, pri = payload(record, variant)
    text = frame(seq, site, need, hc, pri)
    fid = f"{fid_base}-{seq}" if rerankable else fid_base
    if how == "crc":
        text = bad_trailer(text)
    elif how == "cut":
        text = text[:-5]
    elif how == "crlf":
        text += "\r\n"
    elif how == "upper":
        text = text[:-2] + text[-2:].upper()
    elif how == "mismatch":
        fid = f"{fid_base}-{seq + 1}"
    elif how == "nonascii":
        text = text.replace("1", "\u0661", 1)
    elif how == "toolong":
        text = text + " " * 300
    elif how == "unreadable":
        text = Unreadable("\\x00 broken", "bad_encoding")
    elif how == "phone":
        fid = "+254712345678"
    return fid, text


arrival = st.tuples(
    st.just("frame"),
    st.integers(0, 5),  # record
    st.integers(1, 4),  # pack rank: a change is a re-rank
    st.integers(0, 2),  # payload variant: another is a conflict, a third a conflict of a conflict
    st.sampled_from(HOWS),
    st.booleans(),  # a <rec_id>-<seq> id (re-rankable) or an opaque one
)
garbage = st.tuples(
    st.just("garbage"),
    st.one_of(st.text(max_size=20), st.none(), st.integers(), st.just("+254 712 345 678")),
    st.one_of(st.text(max_size=40), st.none(), st.binary(max_size=10)),
)
from_file = st.tuples(st.just("file"), st.sampled_from(["a.txt", "b\u00e9.csv", "x\x1by.txt", None]))
settle = st.tuples(st.just("settle"), st.integers(0, 5), st.integers(0, 2), st.integers(1, 4))
evict = st.tuples(st.just("evict"), st.integers(1, 40))  # days forward
flush = st.tuples(st.just("flush"))
tick = st.tuples(st.just("tick"))
ops = st.lists(st.one_of(arrival, arrival, arrival, arrival, garbage, from_file, settle, evict, flush, flush, tick),
               max_size=80)


def dump(r: Receiver) -> dict:
    """Every table the ingest writes, row for row (counted tables summed over their writer rows)."""
    db = r.db
    out = {}
    summed = {
        "counters": "SELECT source, outcome, SUM(count) FROM counters GROUP BY source, outcome",
        "totals": "SELECT name, SUM(value) FROM totals GROUP BY name",
        "arrival_minutes": "SELECT minute, source, SUM(count) FROM arrival_minutes GROUP BY minute, source",
    }
    for table in sorted(db.get_tables()):
        if table in ("schema_version", "home_identity"):  # each store its own id
            continue
        if table in summed:
            rows = db.execute_sql(summed[table]).fetchall()
        else:
            cols = [c.name for c in db.get_columns(table) if c.name != "event_id"]
            quoted = ", ".join(db.quoted(c) for c in cols)
            rows = db.execute_sql(f"SELECT {quoted} FROM {db.quoted(table)}").fetchall()
        out[table] = sorted((tuple(row) for row in rows), key=repr)
    return out


# Every table the ingest, an eviction or the test's settlements write.
WRITTEN = ("seen_frames", "cases", "quarantine", "settlements", "rejects", "activity", "counters",
           "arrival_minutes", "totals", "eviction_log", "alert_events")


def emptied(r: Receiver) -> Receiver:
    """The store as new again for the next example (a new PostgreSQL schema per example costs
    seconds): the written tables emptied, their ids counted from 1 again."""
    if r.db.dialect == "postgresql":
        r.db.execute_sql(f"TRUNCATE {', '.join(WRITTEN)} RESTART IDENTITY CASCADE")
    else:
        for table in WRITTEN:
            r.db.execute_sql(f"DELETE FROM {table}")
    return r


def everything_known(r: Receiver, frames) -> Facts:
    """What the store holds about every id and every case key of ``frames``, plainly: the facts the
    ingest's pruned lookups (``_gather``) must decide exactly as."""
    m = r.m
    ids, keys = {f.frame_id for f in frames}, {f.case_key for f in frames}
    seen = {s.frame_id: s.frame_text for s in m.SeenFrame.select() if s.frame_id in ids}
    cases = {c.case_key: CaseRef(c.frame_id, c.frame_text, (c.site, c.need, c.headcount, c.pri))
             for c in m.Case.select() if c.case_key in keys}
    quarantined = {(q.frame_id, q.frame_text) for q in m.Quarantine.select() if q.frame_id in ids}
    texts: dict = {}
    payloads: dict = {}
    for row in m.Settlement.select():
        if row.case_key in cases:
            texts.setdefault(row.case_key, set()).add(row.frame_text)
            payloads.setdefault(row.case_key, set()).add(payload_from_key(row.payload))
    return Facts(seen, quarantined, cases, texts, payloads)


def assert_gathered_as_everything(r: Receiver, items, now: float, source: str) -> None:
    """The batch decided on ``_gather``'s facts equals the batch decided on everything known."""
    offers = as_offers(items)
    results = [parse(o.frame_id, o.text) for o in offers]
    asked = needs_facts(results)
    with r.db.atomic():
        gathered, known = r._gather(asked), everything_known(r, asked)
    assert decide_batch(offers, results, gathered, now, source) == decide_batch(offers, results, known, now, source)


@pytest.fixture(params=["compiled", "python"])
def loops(request, monkeypatch):
    """The fast path's inner loops in C (core/rules/_fastpath.c) and in Python, each checked. The
    build skips the C module where no compiler is found; in CI (or with USSD_REQUIRE_COMPILED=1) a
    missing one fails, so a broken build is never passed off as the Python loops'."""
    from core.rules import compiled

    if request.param == "python":
        monkeypatch.setattr(compiled, "loops", None)
    elif compiled.loops is None:
        if os.environ.get("CI") or os.environ.get("USSD_REQUIRE_COMPILED") == "1":
            pytest.fail("core/rules/_fastpath.c was not built (make rebuilds it when it changes)")
        pytest.skip("core/rules/_fastpath.c was not built: no C compiler at install time")
    return request.param


@pytest.fixture
def pair(new_store, loops):
    """A reference receiver and a fast one, on two stores of one backend, for all examples."""
    ref, fast = Receiver(new_store()), Receiver(new_store())
    ref.fast_ingest = False
    yield ref, fast
    ref.close()
    fast.close()


def run_both(pair, operations, chunk: int) -> None:
    ref, fast = (emptied(r) for r in pair)
    assert fast.fast_ingest  # the default
    ref.chunk_frames = fast.chunk_frames = chunk
    try:
        now = float(T0)
        pending: list[tuple] = []
        label = None
        line = 0

        def push() -> None:
            source = "api" if len(pending) % 2 else "gw_a"
            assert_gathered_as_everything(ref, pending, now, source)
            want = ref.ingest_many(list(pending), now=now, source=source)
            got = fast.ingest_many(list(pending), now=now, source=source)
            assert got == want
            pending.clear()

        for op in operations:
            kind = op[0]
            if kind == "frame":
                _, record, seq, variant, how, rerankable = op
                fid, text = render(f"r{record}" if rerankable else f"op{record}", record, seq, variant, how,
                                   rerankable)
                line += 1
                pending.append((fid, text) if label is None else (fid, text, label, line))
            elif kind == "garbage":
                pending.append((op[1], op[2]))
            elif kind == "file":
                label = op[1]
            elif kind == "settle":
                push()
                _, record, variant, seq = op
                text = frame(seq, *payload(record, variant))
                for r in (ref, fast):
                    r.m.Settlement.create(case_key=f"rec:r{record}", frame_text=text,
                                          payload=payload_key(payload(record, variant)), quarantine_id=0)
            elif kind == "evict":
                push()
                now += op[1] * DAY
                assert ref.evict(now=now) == fast.evict(now=now)
            elif kind == "tick":
                now += 61.5
            else:
                push()
        push()
        assert dump(fast) == dump(ref)
    finally:
        ref.chunk_frames = fast.chunk_frames = Receiver.chunk_frames


@examples(25, fuzz=3000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(operations=ops, chunk=st.sampled_from([1, 2, 3, 7, 20_000]))
@example(operations=[("frame", 1, 1, 0, "ok", True)] * 3 + [("frame", 1, 2, 0, "ok", True),
                     ("frame", 1, 1, 1, "ok", True), ("frame", 1, 1, 1, "ok", True),
                     ("frame", 1, 3, 2, "ok", True), ("flush",), ("frame", 1, 1, 1, "ok", True),
                     ("settle", 1, 1, 1), ("frame", 1, 4, 1, "ok", True), ("evict", 31),
                     ("frame", 1, 1, 0, "ok", True), ("frame", 1, 1, 2, "ok", True)], chunk=20_000)
@example(operations=[("file", "b\u00e9.csv"), ("frame", 2, 1, 0, "ok", False), ("frame", 2, 2, 0, "ok", False),
                     ("garbage", "+254 712 345 678", None), ("frame", 2, 1, 1, "phone", True),
                     ("frame", 3, 1, 0, "crc", True), ("frame", 3, 1, 0, "ok", True)], chunk=2)
@example(operations=[("frame", 1, 1, 0, "ok", True), ("flush",), ("settle", 1, 0, 1), ("frame", 1, 1, 0, "ok", True),
                     ("frame", 2, 1, 0, "ok", True)], chunk=20_000)  # a settled witness re-sent
def test_fast_path_equals_reference(pair, operations, chunk):
    run_both(pair, operations, chunk)


def test_a_big_mixed_batch_equals_reference(pair):
    """Batches of thousands, the shape the benchmark and a big file give (many keys at once)."""
    from tests.bench import mixed_lines

    ref, fast = (emptied(r) for r in pair)
    items = []
    for n, line in enumerate(mixed_lines(6_000, "m", seed=5)):
        fid, text = line.split(" ", 1)
        items.append((fid, text, "mixed.txt", n + 1))
    for part in (items[:2500], items[2500:], items):
        assert fast.ingest_many(part, now=T0, source="cli") == ref.ingest_many(part, now=T0, source="cli")
    assert dump(fast) == dump(ref)
    assert len(dump(ref)["cases"]) > 2000


def test_a_case_applied_after_a_slow_frame_of_its_key_keeps_arrival_order(pair):
    """A witness with no case (a store that lost its case row, or one written before cases
    existed) sends the first frame of its key down the slow path; a later frame of that key is
    then applied by ``decide`` itself, between first arrivals applied in bulk. The cases' ids
    must still follow arrival order, and every other row match."""
    ref, fast = (emptied(r) for r in pair)
    for r in (ref, fast):
        r.m.SeenFrame.create(frame_id="r7-1", frame_text=frame(1, "Kakuma1", "MED", 4, 50), crc8="00",
                             first_seen=T0 - 10, last_seen=T0 - 10, seen_count=1, last_source="api")
    items = [("a1-1", frame(1, "S9", "WAT", 3, 51)),
             ("r7-1", frame(1, "Kakuma1", "MED", 4, 50)),  # its witness, no case: a re-send
             ("a2-1", frame(1, "S9", "FOO", 5, 52)),
             ("r7-2", frame(2, "Kakuma1", "MED", 4, 50)),  # first of rec:r7 with no witness: applied by decide
             ("a3-1", frame(1, "S9", "SHE", 6, 53)),
             ("r7-2", frame(2, "Kakuma1", "MED", 4, 50)),  # and its re-send
             ("a1-1", frame(1, "S9", "WAT", 3, 51))]
    want = ref.ingest_many(items, now=T0, source="cli")
    assert fast.ingest_many(items, now=T0, source="cli") == want
    assert [v.reason for v in want] == ["new", "retransmit", "new", "new", "new", "retransmit", "retransmit"]
    assert dump(fast) == dump(ref)
    rows = fast.db.execute_sql("SELECT case_key FROM cases ORDER BY id").fetchall()
    assert [r[0] for r in rows] == ["rec:a1", "rec:a2", "rec:r7", "rec:a3"]


def test_duplicates_inside_a_batch_and_across_its_chunks(pair):
    """The same new frame several times in one call, its copies falling in the same chunk and in
    later ones, with a conflicting copy and a re-rank between: the first is applied, the exact
    copies are re-sends whichever chunk they are in."""
    ref, fast = (emptied(r) for r in pair)
    a, b = frame(1, "S9", "MED", 3, 50), frame(1, "S9", "MED", 9, 50)
    items = [("r1-1", a), ("r1-1", a), ("r1-1", b), ("r1-2", frame(2, "S9", "MED", 3, 50)), ("r1-1", a),
             ("x", frame(1, "S9", "WAT", 1, 1)), ("r1-1", b), ("x", frame(1, "S9", "WAT", 1, 1)), ("r1-1", a)]
    for chunk in (1, 2, 4, 100):
        ref, fast = (emptied(r) for r in pair)
        ref.chunk_frames = fast.chunk_frames = chunk
        try:
            assert fast.ingest_many(items, now=T0, source="api") == ref.ingest_many(items, now=T0, source="api")
            assert dump(fast) == dump(ref)
        finally:
            ref.chunk_frames = fast.chunk_frames = Receiver.chunk_frames


ID_CHARS = "ab09._:-" + "-1x"
SPACE = " \t\r\n\x0b\x0c"  # what parse strips around a frame
FRAME_CHARS = "H1|#MEDWAT0123456789abcdefABCDEFSk \t\r\n\x0b\x0c\u0661"


@examples(300, fuzz=20_000)
@given(frame_id=st.one_of(st.text(ID_CHARS, max_size=70), st.builds(lambda r, s: f"r{r}-{s}", st.integers(0, 9),
                                                                      st.integers(0, 99999))),
       text=st.one_of(
           st.builds(lambda seq, site, need, hc, pri, how: render("x", 0, seq, 0, how, False)[1]
                     if how not in ("ok", "crc") else frame(seq, site, need, hc, pri),
                     st.integers(0, 99999), st.text("Ka1", min_size=0, max_size=9), st.sampled_from(NEEDS + ["med"]),
                     st.integers(0, 9999999), st.integers(0, 9999), st.sampled_from(HOWS[:-1])),
           st.builds(lambda t, pre, post, upper: (pre + (t[:-2] + t[-2:].upper() if upper else t) + post),
                     st.builds(frame, st.integers(1, 4), st.just("S9"), st.just("MED"), st.integers(1, 9),
                               st.integers(0, 99)),
                     st.text(" \t\r\n\x0b\x0c", max_size=120), st.text(" \t\r\n\x0b\x0c", max_size=120), st.booleans()),
           st.text(FRAME_CHARS, max_size=80)))
@example(frame_id="r1-1", text=" " * 130 + frame(1, "S9", "MED", 3, 50) + "\t" * 110)  # too long only raw
@example(frame_id="r1-1", text=" " * 96 + frame(1, "S9", "MED", 3, 50).upper() + "\r\n")
def test_the_common_form_parses_as_parse_does(frame_id, text):
    """The batch parse's one match of the common form gives exactly what ``parse`` gives, on frames,
    near-frames (spaces around, an upper-case trailer, a sequence the id disagrees with, too long,
    not ASCII) and junk; so does the compiled parse, or it hands the line back (None)."""
    from core.rules import compiled
    from core.rules.frame import parse
    from core.rules.parse_batch import parse_common

    for fid in (frame_id, f"r{len(text) % 7}-1", f"r{len(text) % 7}-2"):
        want = parse(fid, text)
        assert parse_common(fid, text) == want
        if compiled.loops is not None:
            got = compiled.loops.parse_one(fid, text)
            assert got is None or (got == want and type(got) is type(want)), (fid, text)
            lead, trail = (len(text) - len(text.lstrip(SPACE)), len(text) - len(text.rstrip(SPACE)))
            if type(want) is Frame and lead <= 96 and trail <= 96:
                assert got is not None, (fid, text)  # the common form: never handed back


def test_the_compiled_parse_takes_the_common_form_and_hands_the_rest_back(loops):
    """What the C parse decides itself, and what it leaves to ``parse``: a line of each kind gives
    ``parse``'s result through ``parse_all`` either way."""
    from core.rules import compiled
    from core.rules.parse_batch import parse_all

    good = frame(1, "S9", "MED", 3, 50)
    lines = [("r1-1", good), ("r1-1", bad_trailer(good)), ("r1-1", good[:-2] + good[-2:].upper()),
             ("r1-2", good), ("r1-01", good), ("r1-" + "9" * 40, good), ("x-", good), ("-1", good), ("a" * 65, good),
             ("r1-1", " \t" + good + "\r\n"), ("r1-1", " " * 97 + good), ("r1-1", good.replace("S9", "S\u0669")),
             ("r1-1", good.replace("MED", "med")), ("r1-1", good + "x"), ("r\u00e9-1", good), (None, good),
             ("r1-1", None), ("r1-1", Unreadable("\\xff", "bad_encoding"))]
    offers = as_offers(lines)
    assert parse_all(offers, {}) == [parse(o.frame_id, o.text) for o in offers]
    if loops == "compiled":
        taken = [compiled.loops.parse_one(f, t) is not None for f, t in lines[:15]]
        assert taken == [True, True, True, False, True, False, True, True, False, True, False, False, False,
                         False, False]


def test_the_parse_memo_of_one_call_is_bounded(monkeypatch):
    """Re-sends within one call are parsed once by the Python loop (the C one parses a line in less
    time than the memo takes to find it), but a call of millions of frames does not keep every
    pair it parsed: past ``PARSE_MEMO`` the memo starts again."""
    from core.rules import compiled, parse_batch

    monkeypatch.setattr(compiled, "loops", None)

    memo: dict = {}
    items = as_offers([(f"m{i}-1", frame(1, "S9", "MED", 3, 50)) for i in range(3)] * 2)
    got = parse_batch.parse_all(items, memo)
    assert got == [parse(o.frame_id, o.text) for o in items] and len(memo) == 3
    assert got[0] is got[3]  # the re-send took the first one's result
    memo.update({(str(i), "x"): None for i in range(parse_batch.PARSE_MEMO)})
    parse_batch.parse_all(items[:1], memo)
    assert len(memo) == 1
