"""The two Hypothesis profiles do what the guides say: `make test` the same examples every time,
`make fuzz` at random and longer, and a test's own budget follows the profile it runs under."""

from __future__ import annotations

import subprocess
import sys

from tests.support.helpers import ROOT

PROBE = ("from tests.support.hypothesis_settings import examples; from hypothesis import settings as s; "
         "d = s.default; e = examples(100, fuzz=2000); "
         "print(d.derandomize, d.database is None, d.max_examples, e.max_examples, e.derandomize)")


def probe(profile: str | None) -> str:
    env = {"PATH": "/usr/bin:/bin"} if profile is None else {"PATH": "/usr/bin:/bin", "HYPOTHESIS_PROFILE": profile}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_make_test_tries_the_same_bounded_examples_every_time():
    assert probe(None) == ["True", "True", "200", "100", "True"]


def test_make_fuzz_explores_at_random_and_longer_and_a_tests_own_budget_follows():
    assert probe("fuzz") == ["False", "True", "20000", "2000", "False"]
