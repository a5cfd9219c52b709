"""Property tests: any interleaving of sessions, re-sends, partial re-sends, re-ranks,
corrupted copies, garbage and evictions applies each case at most once and loses nothing valid."""

import functools

from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from core import Outcome, Receiver
from core.rules.retention import DAY
from tests.support.helpers import bad_trailer, frame
from tests.support.hypothesis_settings import examples

T0 = 1_700_000_000
SITES = ["Kakuma1", "Kakuma2", "Dadaab1"]
NEEDS = ["MED", "SHE", "WAT", "FOO"]


def payload(record: int, variant: int):
    return (SITES[record % 3], NEEDS[record % 4], 1 + record * 3 + variant * 100, 50 + record)


arrival = st.tuples(
    st.just("frame"),
    st.integers(0, 7),  # record
    st.integers(1, 4),  # pack rank (re-ranks happen when it changes)
    st.integers(0, 1),  # payload variant (1 = a different, conflicting version)
    st.sampled_from(["ok", "ok", "ok", "crc", "cut", "crlf", "upper"]),
)
garbage = st.tuples(st.just("garbage"), st.text(max_size=40), st.text(max_size=60))
evict = st.tuples(st.just("evict"), st.integers(1, 40))  # days forward
batch_break = st.tuples(st.just("flush"))
ops = st.lists(st.one_of(arrival, arrival, arrival, garbage, evict, batch_break), max_size=60)


def render(record, seq, variant, how):
    site, need, hc, pri = payload(record, variant)
    text = frame(seq, site, need, hc, pri)
    if how == "crc":
        return text.replace(text[-2:], bad_trailer(text)[-2:]), False
    if how == "cut":
        return text[:-5], False
    if how == "crlf":
        return text + "\r\n", True
    if how == "upper":
        return text[:-2] + text[-2:].upper(), True
    return text, True


@examples(50, fuzz=2000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(operations=ops)
def test_each_case_once_nothing_valid_lost(new_store, operations):
    first_payload: dict[int, tuple] = {}
    now = T0
    pending: list[tuple] = []
    expected_kinds: list[tuple] = []
    with Receiver(new_store()) as r:
        def flush():
            verdicts = r.ingest_many([(fid, text) for fid, text, *_ in pending], now=now)
            assert len(verdicts) == len(pending)  # exactly one outcome per offered frame
            for (fid, text, valid), v in zip(pending, verdicts):
                if not valid:
                    assert v.outcome in (Outcome.REJECT_BAD_CRC, Outcome.REJECT_BAD_FORMAT), (fid, text, v)
                else:
                    assert v.outcome in (Outcome.APPLIED, Outcome.DUPLICATE, Outcome.CONFLICT_QUARANTINED), (fid, text, v)
            pending.clear()

        for op in operations:
            if op[0] == "frame":
                _, record, seq, variant, how = op
                text, valid = render(record, seq, variant, how)
                if valid and record not in first_payload:
                    first_payload[record] = payload(record, variant)
                pending.append((f"r{record}-{seq}", text, valid))
            elif op[0] == "garbage":
                pending.append((op[1], op[2], None))
                verdicts = r.ingest_many([(op[1], op[2])], now=now)
                assert len(verdicts) == 1
                pending.pop()
            elif op[0] == "evict":
                flush()
                now += op[1] * DAY
                r.evict(now=now)
            else:
                flush()
        flush()

        ledger = {c.frame_id.rsplit("-", 1)[0]: c for c in r.cases(limit=1000)}
        # at most once: one ledger row per record, and nothing beyond the valid records
        assert r.count_cases() == len(ledger) == len(first_payload)
        for record, (site, need, hc, pri) in first_payload.items():
            case = ledger[f"r{record}"]  # nothing valid is lost
            assert (case.site, case.need, case.headcount, case.pri) == (site, need, hc, pri)
        assert r.headcount_total() == sum(p[2] for p in first_payload.values())
        assert r.totals().frames == sum(sum(c.values()) for c in r.per_source().values())


@examples(300, fuzz=20_000)
@given(st.one_of(st.text(max_size=80), st.binary(max_size=80), st.none(), st.integers()),
       st.one_of(st.text(max_size=120), st.binary(max_size=120), st.none(), st.integers()))
def test_no_input_raises(fid, text):
    [v] = shared_receiver().ingest_many([(fid, text)], now=T0)
    assert isinstance(v.outcome, Outcome)
    assert v.frame_id.isprintable()


@functools.cache
def shared_receiver() -> Receiver:
    """One store for every example: making a store costs more than the example, and what came
    before only turns a later offer into a duplicate, which must not raise either."""
    return Receiver(":memory:")
