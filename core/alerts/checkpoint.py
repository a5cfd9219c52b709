"""The audit checkpoint sent as an alert whenever the signed log has grown, so a copy of its
head lives away from the machine (a cut-off tail then shows against it)."""

from __future__ import annotations

from types import SimpleNamespace

from core.rules import events
from core.signing.audit import head
from core.store import outbox
from core.store.database import write_transaction
from core.store.models import bind_models


def audit_checkpoint(db) -> events.Event:
    """The checkpoint event for the log as it is now: the same line `audit checkpoint` prints
    (entry count, head hash, active operators' key fingerprints), which `audit verify
    --checkpoint` checks later. A log that does not verify sends no line to keep, but says so.
    """
    from core.signing.audit import make_checkpoint

    result, cp = make_checkpoint(SimpleNamespace(db=db, m=bind_models(db)))
    current = head(SimpleNamespace(db=db))
    if cp is None:
        return events.checkpoint(current.count, current.hash, problem=result.why)
    return events.checkpoint(current.count, current.hash, line=cp.line(), operators=cp.operators)


def maybe_checkpoint(db) -> bool:
    """Record a checkpoint event if the log has grown since the last one; True if one was."""
    if head(SimpleNamespace(db=db)).count <= outbox.last_checkpoint(db):
        return False  # read first: the write lock is taken only when there is news
    with write_transaction(db):
        event = audit_checkpoint(db)
        if event.details["entries"] <= outbox.last_checkpoint(db):
            return False
        outbox.record(db, event)
    return True
