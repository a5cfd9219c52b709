"""The lifecycle table (core.rules.lifecycle): every move, allowed or refused, by name."""

from __future__ import annotations

import itertools

import pytest

from core.rules.lifecycle import MOVES, RANKED, STATUSES, LifecycleError, check_move, check_status, is_ranked

ALLOWED = {
    ("open", "dispatched"), ("open", "served"), ("open", "closed"),
    ("dispatched", "open"), ("dispatched", "served"), ("dispatched", "closed"),
    ("served", "open"),
    ("closed", "open"),
}


@pytest.mark.parametrize("current,wanted", list(itertools.product(STATUSES, STATUSES)))
def test_every_move_is_allowed_or_refused_as_documented(current, wanted):
    if (current, wanted) in ALLOWED:
        assert check_move(current, wanted) == wanted
    else:
        with pytest.raises(LifecycleError) as err:
            check_move(current, wanted)
        assert ("already" in str(err.value)) == (current == wanted)


def test_the_table_is_the_documented_one():
    assert {(a, b) for a, bs in MOVES.items() for b in bs} == ALLOWED
    assert RANKED == ("open", "dispatched")
    assert [s for s in STATUSES if is_ranked(s)] == ["open", "dispatched"]


@pytest.mark.parametrize("word", ["", "done", "SERVED ", "open\x1b"])
def test_a_status_is_a_known_word(word):
    if word.strip().lower() in STATUSES:
        assert check_status(word) == word.strip().lower()
    else:
        with pytest.raises(LifecycleError, match="one of open, dispatched, served, closed"):
            check_status(word)
