"""Alerts that reach a person: ``[alerts]`` settings (``config``), sending to a command or a URL
(``targets``), the outbox's delivery threads (``deliverer``) and the audit checkpoint event
(``checkpoint``). The outbox itself is the store's (``core.store.outbox``).

Names are looked up on first use (PEP 562): reading the settings does not load the HTTP client.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "AlertsConfig": "core.alerts.config",
    "load_alerts_config": "core.alerts.config",
    "Deliverer": "core.alerts.deliverer",
    "SendError": "core.alerts.targets",
    "send": "core.alerts.targets",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'core.alerts' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
