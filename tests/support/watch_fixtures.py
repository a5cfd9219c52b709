"""The ``watcher`` fixture: start real ``watch`` processes, and stop each one the test left running."""

from __future__ import annotations

import pytest

from tests.support.watch import Watcher


@pytest.fixture
def watcher(home, tmp_path):
    started = []

    def start(*flags):
        w = Watcher(home, tmp_path, *flags)
        started.append(w)
        return w

    yield start
    for w in started:
        if w.proc.poll() is None:
            assert w.signal(15) == 0, w.stderr()
