"""``[gateways]`` in ``config.toml``: where ``watch`` listens for gateways' posts (default: it does not).

``listen = "127.0.0.1:8580"`` (a bare port listens on loopback only),
``tls_cert`` and ``tls_key`` for HTTPS (SMS Gateway for Android insists on it
off loopback), ``rate`` and ``burst``: posts a second each gateway may make
before it is answered 429 with ``Retry-After``. The front door's limits
(``core.gateways.door``): ``max_connections`` held at once in total and
``max_connections_per_peer`` from one address (an IPv6 address's /64), both
below the process's open-file limit, and ``header_timeout`` / ``body_timeout``,
the seconds a connection has to send a request's headers and then its body.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from core.config import read_toml
from core.i18n import N_, MarkedError

LOOPBACK = "127.0.0.1"
KNOWN = ("listen", "tls_cert", "tls_key", "rate", "burst", "max_connections", "max_connections_per_peer",
         "header_timeout", "body_timeout")
MOST_CONNECTIONS = 1_000_000
LONGEST_TIMEOUT = 3600.0


class GatewaysConfigError(MarkedError, ValueError):
    """``[gateways]`` or ``--listen`` that does not read; the message names the key, for the operator."""


@dataclass(frozen=True)
class GatewaysConfig:
    host: str = LOOPBACK
    port: int = 0
    tls_cert: str | None = None
    tls_key: str | None = None
    rate: float = 5000.0
    burst: float = 10000.0
    # Below the shipped unit's LimitNOFILE=1024 with room for the store, the inbox and the logs
    # (``door.FILES_BESIDE``); one address (or a reverse proxy in front) holds an eighth of them.
    max_connections: int = 512
    max_connections_per_peer: int = 64
    header_timeout: float = 5.0  # seconds for a TLS handshake, and again for a request's headers
    body_timeout: float = 30.0  # seconds for a body of up to 64 KiB (about 2 KiB/s at the slowest)


def parse_listen(value: object, where: str = "--listen") -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT``, ``:PORT`` or ``PORT`` (loopback)."""
    text = str(value).strip()
    host, port = LOOPBACK, text
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1:end + 2] != ":":
            raise GatewaysConfigError(N_("%(where)s: %(text)s is not HOST:PORT"), where=where, text=repr(text))
        host, port = text[1:end], text[end + 2:]
    elif ":" in text:
        host, port = text.rsplit(":", 1)
        host = host or LOOPBACK
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise GatewaysConfigError(N_("%(where)s: %(text)s is not HOST:PORT (a port is 0-65535)"), where=where,
                                  text=repr(text))
    return host, int(port)


def load_gateways_config(config_path: Path, listen: str | None = None) -> GatewaysConfig | None:
    """The listener's settings, or None when nothing asks to listen (``--listen`` beats the file)."""
    table: Mapping[str, Any] = read_toml(config_path).get("gateways", {})
    if not isinstance(table, dict):
        raise GatewaysConfigError(N_("[gateways] must be a table"))
    for key in table:
        if key not in KNOWN:
            raise GatewaysConfigError(N_("[gateways]: unknown setting %(key)s (known: %(known)s)"), key=repr(key),
                                      known=", ".join(KNOWN))
    given = listen if listen is not None else table.get("listen")
    if given is None:
        return None
    host, port = parse_listen(given, "--listen" if listen is not None else "[gateways] listen")
    cert, key = table.get("tls_cert"), table.get("tls_key")
    if (cert is None) != (key is None):
        raise GatewaysConfigError(N_("[gateways]: tls_cert and tls_key go together"))
    for name in ("tls_cert", "tls_key"):
        value = table.get(name)
        if value is not None and not isinstance(value, str):
            raise GatewaysConfigError(N_("[gateways] %(name)s is a file path"), name=name)
    rate = table.get("rate", GatewaysConfig.rate)
    burst = table.get("burst", 2 * rate if isinstance(rate, (int, float)) else rate)
    for name, value in (("rate", rate), ("burst", burst)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise GatewaysConfigError(N_("[gateways] %(name)s must be a positive number of posts a second, not %(value)s"),
                                      name=name, value=repr(value))
    total = _whole(table, "max_connections", GatewaysConfig.max_connections, MOST_CONNECTIONS)
    per_peer = _whole(table, "max_connections_per_peer", min(GatewaysConfig.max_connections_per_peer, total), total)
    header = _seconds(table, "header_timeout", GatewaysConfig.header_timeout)
    body = _seconds(table, "body_timeout", GatewaysConfig.body_timeout)
    base = config_path.parent
    return GatewaysConfig(host, port, str(base / cert) if cert else None, str(base / key) if key else None,
                          float(rate), float(burst), total, per_peer, header, body)


def _whole(table: Mapping[str, Any], name: str, default: int, most: int) -> int:
    value = table.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise GatewaysConfigError(N_("[gateways] %(name)s must be a whole number of connections from 1 to %(most)s, "
                                     "not %(value)s"), name=name, most=f"{most:,}", value=repr(value))
    return value


def _seconds(table: Mapping[str, Any], name: str, default: float) -> float:
    value = table.get(name, default)
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or not 0 < value <= LONGEST_TIMEOUT):
        raise GatewaysConfigError(N_("[gateways] %(name)s must be a number of seconds above 0 and at most "
                                     "%(most)s, not %(value)s"), name=name, most=f"{LONGEST_TIMEOUT:g}",
                                  value=repr(value))
    return float(value)
