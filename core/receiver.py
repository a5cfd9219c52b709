"""The receiver every caller opens: the store, handed the signed retention policy.

The store (``core.store``) never imports signing; signing imports the store.
This module sits above both and joins them: the store's ``retention()`` asks
``core.signing.retention_guard.policy_in_force``, which applies a policy row
only when its audit entry is signed.
"""

from __future__ import annotations

from core.signing.retention_guard import policy_in_force
from core.store.receiver import Receiver as StoreReceiver

__all__ = ["Receiver"]


class Receiver(StoreReceiver):
    """Takes frames in exactly once on a durable store, with the retention policy its signatures allow."""

    def __init__(self, store_target: str, create: bool = True):
        super().__init__(store_target, policy=policy_in_force, create=create)

    def __enter__(self) -> "Receiver":
        return self
