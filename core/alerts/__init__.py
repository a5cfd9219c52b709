"""Alerts that reach a person: ``[alerts]`` settings (``config``), sending to a command or a URL
(``targets``), the outbox's delivery threads (``deliverer``) and the audit checkpoint event
(``checkpoint``). The outbox itself is the store's (``core.store.outbox``).

Names are looked up on first use (PEP 562): reading the settings does not load the HTTP client.
"""

from __future__ import annotations

from core.lazy import lazy_names

_LAZY = {
    "AlertsConfig": "core.alerts.config",
    "load_alerts_config": "core.alerts.config",
    "Deliverer": "core.alerts.deliverer",
    "SendError": "core.alerts.targets",
    "send": "core.alerts.targets",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_names(__name__, _LAZY)
