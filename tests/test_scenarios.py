"""The public scenarios (the seed's self-test plus R11, R12 and the id/seq rule), in full."""

import json

import pytest

from core import Outcome, Receiver
from tests.support.helpers import SCENARIOS, is_seen

scenarios = json.loads(SCENARIOS.read_text())["scenarios"]


def test_every_scenario_is_here():
    assert len(scenarios) >= 9
    assert len({s["name"] for s in scenarios}) == len(scenarios)


def run(r: Receiver, steps):
    for step in steps:
        kind = step[0]
        if kind == "ingest":
            _, fid, text, now, expected = step
            v = r.ingest(fid, text, now=now)
            assert v.outcome == Outcome(expected), (step, v)
        elif kind == "evict":
            _, now, expected = step
            assert r.evict(now=now) == expected, step
        elif kind == "seen":
            _, fid, expected = step
            assert is_seen(r, fid) is expected, step
        else:
            raise AssertionError(f"unknown step {step}")


@pytest.mark.parametrize("scenario", scenarios, ids=[s["name"] for s in scenarios])
def test_scenario_one_frame_at_a_time(scenario, new_store):
    with Receiver(new_store()) as r:
        run(r, scenario["steps"])
        assert r.headcount_total() == scenario["headcount_total"]


@pytest.mark.parametrize("scenario", scenarios, ids=[s["name"] for s in scenarios])
def test_scenario_batched(scenario, new_store):
    """Runs of consecutive ingests at one timestamp go through ingest_many as one batch."""
    with Receiver(new_store()) as r:
        steps = scenario["steps"]
        i = 0
        while i < len(steps):
            if steps[i][0] != "ingest":
                run(r, [steps[i]])
                i += 1
                continue
            j = i
            while j < len(steps) and steps[j][0] == "ingest" and steps[j][3] == steps[i][3]:
                j += 1
            batch = steps[i:j]
            verdicts = r.ingest_many([(s[1], s[2]) for s in batch], now=batch[0][3])
            assert [v.outcome.value for v in verdicts] == [s[4] for s in batch]
            i = j
        assert r.headcount_total() == scenario["headcount_total"]
