"""``[alerts]`` in ``<home>/config.toml``: where events go, checked at start like ``[inbox]``.

::

    [alerts]
    command = "/usr/local/bin/notify-team --camp kakuma"  # run without a shell; one event as JSON on stdin
    url = "http://127.0.0.1:9000/hooks/ussd"              # POST application/json (user:pass@ is Basic auth)
    token_file = "/etc/ussd/alert-token"  # optional: its first line is sent as "Authorization: Bearer ..."
    headers = { "X-Hook-Secret" = "..." } # optional: more headers for the url target
    events = ["conflict", "file_rejected", "fault", "fault_cleared", "checkpoint", "report"]
    timeout = 10.0       # seconds a target may take before the attempt counts as failed
    retry_first = 2.0    # seconds before the first retry; each next one waits twice as long...
    retry_cap = 300.0    # ...up to this
    fault_after = 300.0  # a target failing this long is a fault the console and health show
    keep_delivered_days = 30   # events every target had delivered longer ago than this are pruned
    pending_fault = 1000       # a target owing more alerts than this is one fault until it catches up

A bad value is a ``ValueError`` naming the key, so ``watch`` and the console
refuse to start with one line instead of failing to alert an hour later.
A secret for the url target (its password, a ``?token=``, a header) lives in this file or in
``token_file``, never on a command line; everywhere it is shown it is masked (``core.urls``).
"""

from __future__ import annotations

import contextvars
import dataclasses
import os
import shlex
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlsplit

from core.config import from_table, read_toml
from core.i18n import N_, MarkedError
from core.rules.events import KINDS
from core.urls import mask_url
_WHERE = contextvars.ContextVar("alerts_where", default="[alerts]")  # what a bad value's error names first


class AlertsConfigError(MarkedError, ValueError):
    """An ``[alerts]`` value that does not read; the message names the file and the key, for the operator."""


# (lowest, highest) for the numbers; the ranges keep a typo from silencing alerts.
_RANGES: dict[str, tuple[float, float]] = {
    "timeout": (1.0, 60.0),
    "retry_first": (0.1, 5.0),
    "retry_cap": (1.0, 86400.0),
    "fault_after": (5.0, 7 * 86400.0),
    "keep_delivered_days": (1.0, 3650.0),
    "pending_fault": (1.0, 10_000_000.0),
}


@dataclass(frozen=True)
class AlertsConfig:
    command: tuple[str, ...] | None = None
    url: str | None = None
    events: tuple[str, ...] = KINDS
    timeout: float = 10.0
    retry_first: float = 2.0
    retry_cap: float = 300.0
    fault_after: float = 300.0
    token_file: str | None = None
    headers: Mapping[str, str] | None = None
    # The token read from token_file at start: a missing or empty file is a start-up error, not
    # a 401 an hour later. Never shown (repr=False).
    token: str | None = dataclasses.field(default=None, repr=False, compare=False)
    keep_delivered_days: float = 30.0
    pending_fault: float = 1000.0

    def __post_init__(self) -> None:
        set_ = lambda key, value: object.__setattr__(self, key, value)  # noqa: E731 - frozen
        set_("command", _command(self.command))
        set_("url", _url(self.url))
        set_("headers", _headers(self.headers))
        if self.token_file is not None and self.token is None:
            set_("token", _token(self.token_file))
        set_("events", _events(self.events))
        for key, (low, high) in _RANGES.items():
            set_(key, _number(key, getattr(self, key), low, high))
        if self.retry_cap < self.retry_first:
            raise AlertsConfigError(N_("%(where)s: alerts setting retry_cap (%(retry_cap)s) is below "
                                       "retry_first (%(retry_first)s)"),
                                    where=_WHERE.get(), retry_cap=f"{self.retry_cap:g}", retry_first=f"{self.retry_first:g}")

    @property
    def targets(self) -> dict[str, frozenset[str]]:
        """Each configured target and the kinds it is sent."""
        names = [name for name, value in (("command", self.command), ("url", self.url)) if value]
        return {name: frozenset(self.events) for name in names}

    def backoff(self, failures: int) -> float:
        """Seconds before the next try after ``failures`` failed attempts in a row."""
        return min(self.retry_cap, self.retry_first * 2 ** max(0, failures - 1))

    def replace(self, **changes: Any) -> "AlertsConfig":
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any], where: str = "[alerts]") -> "AlertsConfig":
        """A bad value's error names ``where`` first, as ``core.config.from_table``'s do, in words
        that are translated whole (``from_table`` would make them one English string)."""
        known = {f.name for f in dataclasses.fields(cls)}
        if any(key not in known for key in table):
            return from_table(cls, table, where)  # its words for an unknown setting
        given = _WHERE.set(where)
        try:
            return cls(**dict(table))
        finally:
            _WHERE.reset(given)


def _command(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise AlertsConfigError(N_("%(where)s: alerts setting command cannot be split into words: "
                                       "%(reason)s"), where=_WHERE.get(), reason=exc) from None
    elif isinstance(value, (list, tuple)) and all(isinstance(w, str) for w in value):
        words = list(value)
    else:
        raise AlertsConfigError(N_("%(where)s: alerts setting command must be a string or a list of strings, "
                                   "not %(value)s"), where=_WHERE.get(), value=repr(value))
    if not words or not words[0].strip():
        raise AlertsConfigError(N_("%(where)s: alerts setting command is empty"), where=_WHERE.get())
    if any("\0" in w for w in words):
        raise AlertsConfigError(N_("%(where)s: alerts setting command holds a NUL character"),
                                where=_WHERE.get())
    return tuple(words)


def _url(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise AlertsConfigError(N_("%(where)s: alerts setting url must be a string, not %(value)s"),
                                where=_WHERE.get(), value=repr(value))
    parts = urlsplit(value)
    try:
        parts.port
    except ValueError:
        raise AlertsConfigError(N_("%(where)s: alerts setting url has a bad port: %(url)s"),
                                where=_WHERE.get(), url=repr(mask_url(value))) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AlertsConfigError(N_("%(where)s: alerts setting url must be an http:// or https:// address, not "
                                   "%(url)s"), where=_WHERE.get(), url=repr(mask_url(value)))
    if any(c.isspace() or ord(c) < 32 for c in value):
        raise AlertsConfigError(N_("%(where)s: alerts setting url holds a space or a control character"),
                                where=_WHERE.get())
    return value


def _headers(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise AlertsConfigError(N_("%(where)s: alerts setting headers must be a table of names and string "
                                   "values"), where=_WHERE.get())
    for name, text in value.items():
        if not name or not all(c.isalnum() or c in "-_" for c in name):
            raise AlertsConfigError(N_("%(where)s: alerts setting headers: %(name)s is not a header name"),
                                    where=_WHERE.get(), name=repr(name))
        if any(c in "\r\n\0" for c in text):
            raise AlertsConfigError(N_("%(where)s: alerts setting headers: the value of %(name)s holds a line "
                                       "break"), where=_WHERE.get(), name=name)
    return dict(value)


def _token(path: Any) -> str:
    if not isinstance(path, str) or not path:
        raise AlertsConfigError(N_("%(where)s: alerts setting token_file must be a path, not %(path)s"),
                                where=_WHERE.get(), path=repr(path))
    try:
        with open(path, encoding="utf-8") as fh:
            token = fh.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise AlertsConfigError(N_("%(where)s: alerts setting token_file %(path)s: cannot read: %(reason)s"),
                                where=_WHERE.get(), path=path, reason=getattr(exc, 'strerror', None) or exc.__class__.__name__) from None
    if not token or any(c.isspace() or ord(c) < 32 for c in token):
        raise AlertsConfigError(N_("%(where)s: alerts setting token_file %(path)s: its first line must be the "
                                   "token (no spaces)"), where=_WHERE.get(), path=path)
    return token


def _events(value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise AlertsConfigError(N_("%(where)s: alerts setting events must be a list of event kinds, not "
                                   "%(value)s"), where=_WHERE.get(), value=repr(value))
    unknown = [v for v in value if v not in KINDS]
    if unknown:
        raise AlertsConfigError(N_("%(where)s: alerts setting events: unknown kind %(kind)s (known: "
                                   "%(known)s)"), where=_WHERE.get(), kind=repr(unknown[0]), known=", ".join(KINDS))
    return tuple(dict.fromkeys(value))


def _number(key: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AlertsConfigError(N_("%(where)s: alerts setting %(key)s must be a number, not %(value)s"),
                                where=_WHERE.get(), key=key, value=repr(value))
    if value != value or not low <= value <= high:
        raise AlertsConfigError(N_("%(where)s: alerts setting %(key)s = %(value)s is out of range (%(low)s to "
                                   "%(high)s)"),
                                where=_WHERE.get(), key=key, value=repr(value), low=f"{low:g}", high=f"{high:g}")
    return float(value)


def load_alerts_config(config_path) -> AlertsConfig:
    """``[alerts]`` from the file; no table means no targets (events are still kept in the outbox).
    A relative ``token_file``, and a ``command`` program given as a relative path (``bin/notify``),
    are beside the config file, in the home, whatever folder the command was started in (``~`` is
    the user's home); a bare program name is looked up on ``PATH`` as ever."""
    table = read_toml(config_path).get("alerts", {})
    if not isinstance(table, dict):
        raise AlertsConfigError(N_("%(config)s: 'alerts' must be a table ([alerts])"), config=config_path)
    base = os.path.dirname(os.path.abspath(config_path))
    token_file = table.get("token_file")
    if isinstance(token_file, str) and token_file and not os.path.isabs(token_file):
        table = {**table, "token_file": os.path.join(base, token_file)}
    config = AlertsConfig.from_mapping(table, where=f"{config_path} [alerts]")
    program = config.command[0] if config.command else ""
    if "/" in program:  # join keeps an absolute path (or ~/...) as it is
        placed = os.path.join(base, os.path.expanduser(program))
        if placed != program:
            config = config.replace(command=(placed, *config.command[1:]))
    return config
