"""The receiver: the store's one object, what every delivery path and screen holds.

``Receiver`` joins the ledger writes (``ledger.LedgerWrites``: the ingest;
``retention_writes.RetentionWrites``: retention, eviction) and the read queries (``queries.LedgerReads``) on one
database connection opened and migrated by ``migrations.connect``. It is
handed every package's schema steps and the function that says which retention policy is in force, since
that means checking signatures, which is signing's work, not the store's:
``core.receiver.Receiver`` is the one every caller opens.
"""

from __future__ import annotations

from typing import Callable

from core.rules.batch import Verdict

from .ledger import LedgerWrites
from .migrations import connect
from .queries import LedgerReads
from .retention_writes import RetentionWrites

__all__ = ["Receiver", "Verdict"]


class Receiver(LedgerWrites, RetentionWrites, LedgerReads):
    """Takes frames in exactly once on a durable store, and answers what the store holds."""

    def __init__(self, store_target: str, *, policy: Callable[["Receiver"], dict], steps: list,
                 create: bool = True):
        """``steps``: every package's schema steps, in number order (``core.receiver.schema``).
        ``create=False`` (a reading command): a missing store is an error, never a new file."""
        self.store_target = store_target
        self.policy = policy
        self.db, self.m = connect(store_target, create, steps=steps)

    def close(self) -> None:
        if not self.db.is_closed():
            self.db.close()

    def __enter__(self) -> "Receiver":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
