"""The test hook that holds a real receiver just after a commit (``USSD_HOLD_AFTER_COMMIT``).

The inbox's delivery (after each committed batch of a file) and the gateways' group commit (after
each group of posts) both call it, so it sits below both, beside the commits it follows.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from pathlib import Path

HOLD_ENV = "USSD_HOLD_AFTER_COMMIT"  # see hold_after_commit
_hold_counter = itertools.count()


def hold_after_commit(claim: str, line: int, stop: threading.Event | None = None) -> None:
    """The ``HOLD_ENV`` hook; does nothing unless the variable is set.

    With ``USSD_HOLD_AFTER_COMMIT`` naming a folder, a worker leaves a marker there after each
    committed batch and waits while the marker exists (or until a stop), so a test or the crash
    harness can signal, kill or stop a real receiver at a known point of a file instead of
    guessing a moment. It lives here, not in tests/, because the receiver under test is a real
    ``ussd-console watch`` process (or ``ussd-console ingest``, which calls it after each batch); in the
    store, because both the inbox's delivery and the gateways' group commit call it.
    """
    folder = os.environ.get(HOLD_ENV)
    if not folder:
        return
    marker = Path(folder) / f"{os.getpid()}-{threading.get_ident()}-{next(_hold_counter)}.held"
    temporary = marker.with_suffix(".tmp")
    temporary.write_text(f"{claim}\n{line}\n")
    os.rename(temporary, marker)  # whole when seen
    while marker.exists() and not (stop is not None and stop.is_set()):
        time.sleep(0.005)
