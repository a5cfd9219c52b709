"""The dedup core: pure frame rules and the one receiver that writes the ledger."""

from .decide import Outcome
from .receiver import Receiver, Verdict
from .retention import RetentionError
from .store import StoreError

__all__ = ["Outcome", "Receiver", "RetentionError", "StoreError", "Verdict"]
