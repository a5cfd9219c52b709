"""The dedup core: pure rules, the store that writes the ledger, the inbox, signed actions.

Importing ``core`` loads nothing heavy: the names below are looked up on first
use (PEP 562), so ``import core.rules.frame`` stays free of peewee, psycopg and
sqlite3. See ``core/rules/__init__.py`` for the layout.
"""

from __future__ import annotations

from core.lazy import lazy_names

_LAZY = {
    "Offer": "core.rules.batch",
    "Outcome": "core.rules.decide",
    "Verdict": "core.store.receiver",
    "RetentionError": "core.rules.retention",
    "Receiver": "core.receiver",
    "StoreError": "core.store.database",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_names(__name__, _LAZY)
