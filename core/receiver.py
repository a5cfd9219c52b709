"""The receiver every caller opens: the store, handed the signed retention policy.

The store (``core.store``) never imports signing; signing imports the store.
This module sits above both and joins them: the store's ``retention()`` asks
``core.signing.retention_guard.policy_in_force``, which applies a policy row
only when its audit entry is signed, and the store is handed the schema steps
of every package (``schema``: its own and signing's), so a store is always
opened at the whole schema, whoever opens it.
"""

from __future__ import annotations

from core.signing import migrations as signing_migrations
from core.signing.retention_guard import policy_in_force
from core.store import migrations as store_migrations
from core.store.receiver import Receiver as StoreReceiver

__all__ = ["Receiver", "open_store", "schema"]


def schema() -> list:
    """Every package's schema steps, in number order (read when called, so a test can hold one back)."""
    return sorted(store_migrations.MIGRATIONS + signing_migrations.MIGRATIONS, key=lambda step: step[0])


def open_store(store_target: str, create: bool = True):
    """``(db, models)`` of the store at ``store_target``, brought up to the whole schema."""
    return store_migrations.connect(store_target, create, steps=schema())


class Receiver(StoreReceiver):
    """Takes frames in exactly once on a durable store, with the retention policy its signatures allow."""

    def __init__(self, store_target: str, create: bool = True):
        super().__init__(store_target, policy=policy_in_force, steps=schema(), create=create)

    def __enter__(self) -> "Receiver":
        return self
