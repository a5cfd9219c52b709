"""Every Hypothesis setting of the suite, in one place (loaded as a plugin by tests/conftest.py).

`make test` tries the same bounded examples on every run and every machine (derandomized, no
example database), so a red run means the change under test broke something, never that the
dice found an old flaw that day. Exploring is `make fuzz`'s job (HYPOTHESIS_PROFILE=fuzz):
random and far longer; what it finds becomes an @example in the test.

A test that needs its own budget asks ``examples(n, fuzz=m)``: ``n`` examples under `make test`,
``m`` under `make fuzz`, so no test's count is fixed against the profile.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")

settings.register_profile("default", max_examples=200, deadline=None, derandomize=True, database=None)
# Said outright: a profile inherits what it does not set from the default one, derandomize too.
settings.register_profile(
    "fuzz", max_examples=20_000, deadline=None, derandomize=False, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(PROFILE)


def examples(n: int, fuzz: int | None = None, **more) -> settings:
    """Settings for one test: ``n`` examples, or ``fuzz`` (default ``n``) under the fuzz profile."""
    return settings(max_examples=fuzz if PROFILE == "fuzz" and fuzz is not None else n, **more)
