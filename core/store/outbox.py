"""The alert outbox (schema version 4): events, and one delivery row per event and target.

An event is written by ``record`` inside the transaction of what caused it
(a conflict in the ingest, a rejected file in the inbox's reject, a fault in
the inbox service), so it exists exactly when its cause committed. Delivery is
``core.alerts``': a deliverer ``fan_out``s new events into per-target rows
(each target is its own queue, first in first out), ``claim_next`` leases the
head of a target's queue in a write transaction (two processes on one home
never send the same row at once), and ``finish`` records the outcome. A row
whose lease ran out, or whose holder on this machine is gone, is claimed again:
delivery is at least once, and the ``event_id`` a target sees never changes.

``prune_delivered`` removes events every target had delivered long ago (the
newest checkpoint event stays: the next checkpoint is measured against it), so
the outbox holds what is still owed and a recent past, not every event ever.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from types import SimpleNamespace
from typing import Callable, NamedTuple

from peewee import AutoField, BooleanField, Database, DoubleField, IntegerField, Model, TextField

from core.rules.events import CHECKPOINT, Event

from .database import bound_models, write_transaction

STATES = ("pending", "failed", "delivered")
FAN_OUT_BATCH = 500
PRUNE_BATCH = 500  # events removed per transaction: a big first prune never holds the write lock long

def _bind(db: Database) -> SimpleNamespace:
    class Base(Model):
        class Meta:
            database = db
            legacy_table_names = False

    class AlertEvent(Base):
        """One event for a person; ``fanned`` once its per-target rows exist."""

        id = AutoField()
        event_id = TextField(unique=True)
        kind = TextField()
        at = DoubleField()
        summary = TextField()
        details = TextField()  # JSON
        fanned = BooleanField(default=False, index=True)

        class Meta:
            table_name = "alert_events"

    class AlertDelivery(Base):
        """One event for one target: its state, attempts, back-off and lease."""

        id = AutoField()
        event = IntegerField(index=True)  # alert_events.id
        target = TextField()
        state = TextField(default="pending", index=True)  # pending, failed (retrying), delivered
        attempts = IntegerField(default=0)
        next_at = DoubleField()
        last_error = TextField(null=True)
        last_attempt_at = DoubleField(null=True)
        delivered_at = DoubleField(null=True)
        claimed_by = TextField(null=True)
        lease_until = DoubleField(null=True)

        class Meta:
            table_name = "alert_deliveries"
            indexes = ((("target", "event"), True),)

    return SimpleNamespace(AlertEvent=AlertEvent, AlertDelivery=AlertDelivery)


def outbox_models(db: Database) -> SimpleNamespace:
    return bound_models(db, _bind)


def migrate_v15(db: Database, m) -> None:
    o = outbox_models(db)
    db.create_tables([o.AlertEvent, o.AlertDelivery])


def record(db: Database, event: Event, at: float | None = None) -> str:
    """Add one event; call inside the transaction of what caused it. Returns its ``event_id``."""
    event_id = uuid.uuid4().hex
    outbox_models(db).AlertEvent.insert(
        event_id=event_id, kind=event.kind, at=time.time() if at is None else float(at),
        summary=event.summary, details=json.dumps(event.details, sort_keys=True),
    ).execute()
    return event_id


# ``json.dumps(details, sort_keys=True)`` made once: ``dumps`` with any option builds an encoder per call.
_details = json.JSONEncoder(sort_keys=True).encode
# A version-4 UUID's fixed bits (RFC 4122: the version nibble 4, the variant bits 10) and the rest.
_UUID4_BITS = (0x4 << 76) | (0x8 << 60)
_UUID4_RANDOM = ~((0xF << 76) | (0xC << 60)) & ((1 << 128) - 1)


def event_ids(n: int) -> list[str]:
    """``n`` event ids as ``uuid.uuid4().hex`` gives them, from one read of the system's random
    source: a batch of conflicts took one read and one ``UUID`` object an id (about 6 us each,
    more than the alert's row), where these cost about 1.6."""
    raw = os.urandom(16 * n)
    whole = int.from_bytes
    return [f"{whole(raw[i : i + 16], 'big') & _UUID4_RANDOM | _UUID4_BITS:032x}" for i in range(0, 16 * n, 16)]


def record_many(db: Database, events: list[Event], at: float) -> None:
    """``record`` for a batch's events at once (the ingest's conflicts): one multi-row insert, since
    building a query per event cost more than deciding the frames that caused them."""
    if events:
        E = outbox_models(db).AlertEvent
        columns = ("event_id", "kind", "at", "summary", "details", "fanned")
        db.insert_rows(E._meta.table_name, [E._meta.fields[c].column_name for c in columns],
                       [(i, e.kind, float(at), e.summary, _details(e.details), False)
                        for i, e in zip(event_ids(len(events)), events)])


def record_now(db: Database, events: list[Event]) -> None:
    """Events with no transaction of their own to join (faults): one transaction of their own."""
    with write_transaction(db):
        for event in events:
            record(db, event)


def payload(row) -> dict:
    """The JSON object a target receives; the same bytes on every retry."""
    return {"event_id": row.event_id, "kind": row.kind, "at": row.at, "summary": row.summary,
            "details": json.loads(row.details)}


def fan_out(db: Database, wants: dict[str, frozenset[str]], now: float | None = None) -> int:
    """Give every new event a pending row for each target that wants its kind; events handled."""
    o = outbox_models(db)
    E, D = o.AlertEvent, o.AlertDelivery
    now = time.time() if now is None else now
    with write_transaction(db):
        rows = list(E.select(E.id, E.kind).where(E.fanned == False).order_by(E.id).limit(FAN_OUT_BATCH).tuples())  # noqa: E712
        if not rows:
            return 0
        for event, kind in rows:
            for target, kinds in sorted(wants.items()):
                if kind in kinds:
                    D.insert(event=event, target=target, next_at=now).on_conflict_ignore().execute()
        E.update(fanned=True).where(E.id.in_([r[0] for r in rows])).execute()
    return len(rows)


class Claimed(NamedTuple):
    delivery: int
    attempts: int  # before this one
    payload: dict


def claim_next(db: Database, target: str, me: str, lease: float, holder_gone: Callable[[str], bool],
               now: float | None = None) -> Claimed | float | None:
    """Lease the head of ``target``'s queue. Returns the claim, or when to look again (the head is
    backing off or held by a live process), or None when the queue is empty."""
    o = outbox_models(db)
    E, D = o.AlertEvent, o.AlertDelivery
    with write_transaction(db):
        now = time.time() if now is None else now
        head = D.select().where((D.target == target) & (D.state != "delivered")).order_by(D.event).first()
        if head is None:
            return None
        if head.next_at > now:
            return head.next_at
        held = head.claimed_by is not None and head.claimed_by != me and (head.lease_until or 0) > now
        if held and not holder_gone(head.claimed_by):
            return min(head.lease_until, now + 1.0)
        D.update(claimed_by=me, lease_until=now + lease).where(D.id == head.id).execute()
        return Claimed(head.id, head.attempts, payload(E.get_by_id(head.event)))


def finish(db: Database, delivery: int, me: str, error: str | None, retry_in: float,
           now: float | None = None) -> None:
    """Record one attempt: delivered (``error`` None) or failed, due again in ``retry_in`` s."""
    D = outbox_models(db).AlertDelivery
    with write_transaction(db):
        now = time.time() if now is None else now
        changes = {D.attempts: D.attempts + 1, D.last_attempt_at: now, D.claimed_by: None, D.lease_until: None}
        if error is None:
            changes.update({D.state: "delivered", D.delivered_at: now, D.last_error: None})
        else:
            changes.update({D.state: "failed", D.last_error: error, D.next_at: now + retry_in})
        D.update(changes).where((D.id == delivery) & (D.state != "delivered")
                                & ((D.claimed_by == me) | D.claimed_by.is_null())).execute()


def failing_since(db: Database, target: str) -> tuple[float, int] | None:
    """When the head of ``target``'s queue was first tried without success, and how many wait."""
    o = outbox_models(db)
    E, D = o.AlertEvent, o.AlertDelivery
    waiting = D.select().where((D.target == target) & (D.state != "delivered"))
    head = waiting.order_by(D.event).first()
    if head is None or head.state != "failed":
        return None
    created = E.select(E.at).where(E.id == head.event).scalar()
    return created, waiting.count()


def listing(db: Database, state: str | None = None, limit: int = 50) -> list[dict]:
    """Deliveries, newest event first; events not yet given to any target show as pending with no target."""
    o = outbox_models(db)
    E, D = o.AlertEvent, o.AlertDelivery
    out = []
    if state in (None, "pending"):
        for e in E.select().where(E.fanned == False).order_by(E.id.desc()).limit(limit):  # noqa: E712
            out.append(_row(e, None))
    query = D.select(D, E).join(E, on=(D.event == E.id), attr="ev")
    if state is not None:
        query = query.where(D.state == state)
    for d in query.order_by(E.id.desc(), D.target).limit(max(0, limit - len(out))):
        out.append(_row(d.ev, d))
    return out


def _row(e, d) -> dict:
    row = {"event_id": e.event_id, "kind": e.kind, "at": e.at, "summary": e.summary,
           "details": json.loads(e.details), "target": None, "state": "pending", "attempts": 0,
           "last_error": None, "last_attempt_at": None, "next_at": None, "delivered_at": None}
    if d is not None:
        row.update(target=d.target, state=d.state, attempts=d.attempts, last_error=d.last_error,
                   last_attempt_at=d.last_attempt_at, next_at=None if d.state == "delivered" else d.next_at,
                   delivered_at=d.delivered_at)
    return row


def pending_count(db: Database, include_new: bool = True) -> int:
    """Deliveries not yet made, plus (``include_new``) events not yet given to their targets:
    with no target configured those wait for one, and are no backlog."""
    o = outbox_models(db)
    E, D = o.AlertEvent, o.AlertDelivery
    new = E.select().where(E.fanned == False).count() if include_new else 0  # noqa: E712
    return D.select().where(D.state != "delivered").count() + new


def pending_for(db: Database, target: str) -> int:
    """Deliveries ``target`` still owes (pending or failed and retrying)."""
    D = outbox_models(db).AlertDelivery
    return D.select().where((D.target == target) & (D.state != "delivered")).count()


def prune_delivered(db: Database, older_than: float, now: float | None = None) -> int:
    """Remove the events older than ``older_than`` seconds that every target they went to had
    delivered before then, with their delivery rows; how many events went. An event still owed to
    any target, or not yet given to its targets, stays whatever its age; so does the newest
    checkpoint event."""
    o = outbox_models(db)
    E, D = o.AlertEvent, o.AlertDelivery
    from peewee import fn

    cutoff = (time.time() if now is None else now) - older_than
    removed = 0
    while True:
        with write_transaction(db):
            newest_checkpoint = E.select(fn.MAX(E.id)).where(E.kind == CHECKPOINT).scalar()
            owed = D.select(D.event).where((D.state != "delivered") | D.delivered_at.is_null()
                                           | (D.delivered_at >= cutoff))
            query = E.select(E.id).where((E.fanned == True) & (E.at < cutoff) & E.id.not_in(owed))  # noqa: E712
            if newest_checkpoint is not None:
                query = query.where(E.id != newest_checkpoint)
            ids = [row[0] for row in query.order_by(E.id).limit(PRUNE_BATCH).tuples()]
            if ids:
                D.delete().where(D.event.in_(ids)).execute()
                E.delete().where(E.id.in_(ids)).execute()
        removed += len(ids)
        if len(ids) < PRUNE_BATCH:
            return removed


def delivered_count(db: Database) -> dict[str, int]:
    D = outbox_models(db).AlertDelivery
    from peewee import fn

    return dict(D.select(D.target, fn.COUNT(D.id)).where(D.state == "delivered").group_by(D.target).tuples())


def last_checkpoint(db: Database) -> int:
    """The audit entry count the newest checkpoint event carried (0 before the first)."""
    E = outbox_models(db).AlertEvent
    row = E.select(E.details).where(E.kind == CHECKPOINT).order_by(E.id.desc()).first()
    return int(json.loads(row.details).get("entries", 0)) if row is not None else 0


def has_unfanned(db: Database) -> bool:
    E = outbox_models(db).AlertEvent
    return E.select(E.id).where(E.fanned == False).exists()  # noqa: E712


def head_due(db: Database, target: str) -> float | None:
    """When the head of ``target``'s queue may next be tried (read only; None when empty)."""
    D = outbox_models(db).AlertDelivery
    head = D.select(D.next_at, D.lease_until).where((D.target == target) & (D.state != "delivered")) \
        .order_by(D.event).first()
    if head is None:
        return None
    return max(head.next_at, head.lease_until or 0.0)
