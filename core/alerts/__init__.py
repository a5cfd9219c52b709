"""Alerts that reach a person: ``[alerts]`` settings (``config``), sending to a command or a URL
(``targets``), the outbox's delivery threads (``deliverer``) and the audit checkpoint event
(``checkpoint``). The outbox itself is the store's (``core.store.outbox``)."""

from .config import AlertsConfig, load_alerts_config
from .deliverer import Deliverer
from .targets import SendError, send

__all__ = ["AlertsConfig", "Deliverer", "SendError", "load_alerts_config", "send"]
