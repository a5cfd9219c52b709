"""Settings from ``<home>/config.toml`` (standard ``tomllib``), checked at start.

A bad value is a ``ValueError`` naming the key when the program starts, never
a crash an hour later. Command-line flags override the file (``overrides``).
Every value, from the file or a flag, is checked against one table of kinds and
ranges (``_RULES``) in ``InboxConfig.__post_init__``; keep adding settings there
rather than checking them where they are used.

The inbox settings live in an ``[inbox]`` table::

    [inbox]
    sweep_interval = 3.0        # seconds between sweeps of the inbox (the pull path)
    settle_time = 1.0           # seconds a file written in place must be unchanged before it is taken
    max_file_bytes = 67108864   # larger files go to rejected/ unread (64 MiB)
    keep_originals = false      # true: processed/ keeps the file as it came, phone columns included
    evict_every = 3600.0        # seconds between scheduled evictions in `ussd-console watch`
    observer = true             # the watchdog push path; false leaves only the sweep
    sweep = true                # the sweep pull path; false leaves only the observer
    batch_lines = 100000        # frames per transaction (a crash redoes at most one batch)
    id_columns = ["ref"]        # this site's frame id column(s), on top of frame_id, frameid, frame_key
    text_columns = []           # this site's frame text column(s), on top of text, message, body ...
    phone_columns = []          # more columns that hold phone numbers (never read, dropped from copies)

The console's own settings live in a ``[console]`` table::

    [console]
    unlock_minutes = 15         # an unlocked signing key locks after this long without a signature
    language = "fr"             # the console's and the command line's words (else the environment's)

    [console.keys]              # action id = key(s); the console checks ids and clashes at start
    quit = "ctrl+q"

Signing settings live in a ``[signing]`` table (docs/roles.md)::

    [signing]
    countersign = ["retention", "gateway", "operator"]  # these wait for a second admin's approval
    countersign_hours = 72      # a held request expires after this long
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from core.i18n import N_, MarkedError, _
from core.rules.text import Twofold, told


class ConfigError(MarkedError, ValueError):
    """A setting that cannot be used: its words name the file, the section and the key (keys stay
    English), in the operator's language where shown (``said``), English in ``str``."""


def _within(where: object, exc: ValueError) -> ConfigError:
    """``exc`` (a setting's refusal) prefixed with where it was found (the file and its section)."""
    return ConfigError(N_("%(where)s: %(reason)s"), where=where, reason=told(exc))


@dataclass(frozen=True)
class InboxConfig:
    sweep_interval: float = 3.0
    settle_time: float = 1.0
    max_file_bytes: int = 64 * 1024 * 1024
    keep_originals: bool = False
    evict_every: float = 3600.0
    observer: bool = True
    sweep: bool = True
    batch_lines: int = 100_000  # ``HANDOVER_FRAMES``
    id_columns: tuple[str, ...] = ()
    text_columns: tuple[str, ...] = ()
    phone_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for f in fields(self):
            check_setting(f.name, getattr(self, f.name))
        for key in _NAME_LISTS:
            object.__setattr__(self, key, tuple(getattr(self, key)))  # TOML gives a list
        _check_column_names(self)

    @property
    def columns(self):
        """The site's own column names, for the readers and the scrubbed copies."""
        from core.rules.columns import ColumnNames

        return ColumnNames.of(self.id_columns, self.text_columns, self.phone_columns)

    def replace(self, **changes: Any) -> "InboxConfig":
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any], where: str = "[inbox]") -> "InboxConfig":
        return from_table(cls, table, where)


def from_table(cls, table: Mapping[str, Any], where: str):
    """A settings dataclass from one TOML table; an unknown key or a bad value names itself and ``where``."""
    known = {f.name for f in fields(cls)}
    for key in table:
        if key not in known:
            raise ConfigError(N_("%(where)s: unknown setting %(key)s (known: %(known)s)"), where=where, key=repr(key),
                              known=", ".join(sorted(known)))
    try:
        return cls(**dict(table))
    except ValueError as exc:
        raise _within(where, exc) from None


# (kind, lowest allowed, highest allowed); the ranges keep a typo from stalling delivery.
class LanguageCode(str):
    """The kind of a setting that names one of the shipped languages (``core.i18n``); a plain
    ``str`` setting is a time of day."""


_RULES: dict[str, tuple[type, float | None, float | None]] = {
    "sweep_interval": (float, 0.05, 3600.0),
    "settle_time": (float, 0.0, 600.0),
    "max_file_bytes": (int, 1, 2**40),
    "keep_originals": (bool, None, None),
    "evict_every": (float, 1.0, 7 * 86400.0),
    "observer": (bool, None, None),
    "sweep": (bool, None, None),
    "batch_lines": (int, 1, 1_000_000),
    "id_columns": (list, 0, 32),  # lists of column names: at most this many
    "text_columns": (list, 0, 32),
    "phone_columns": (list, 0, 32),
    "unlock_minutes": (float, 0.0, 720.0),  # [console]; at most a long shift
    "language": (LanguageCode, None, None),  # [console]: one of the shipped languages (core.i18n)
    "every": (float, 1.0, 30 * 86400.0),  # [backup], [report]: seconds between scheduled backups or reports
    "keep": (int, 1, 10_000),  # [backup], [report]: backups or reports kept in the folder
    "at": (str, 0, 24 * 60 - 1),  # [report]: the time of day "HH:MM" reports are made at (core.report.config)
    "countersign": (tuple, 0, 3),  # [signing]: kinds of action a second admin approves (_CHOICES)
    "countersign_hours": (float, 1.0, 720.0),  # [signing]: a held request expires after this long
}

# The values a list-of-choices setting (kind ``tuple`` in ``_RULES``) may hold.
COUNTERSIGN_KINDS = ("retention", "gateway", "operator")
_CHOICES = {"countersign": COUNTERSIGN_KINDS}


_NAME_LISTS = ("id_columns", "text_columns", "phone_columns")


def check_setting(key: str, value: Any, section: str = "inbox") -> None:
    """One setting against the rules table (``_RULES``); a bad value is a ValueError naming its
    section and key. Every section's loader checks through it, ``[backup]``'s too."""
    kind, low, high = _RULES[key]
    if kind is LanguageCode:
        if not isinstance(value, str):
            raise ConfigError(N_("%(section)s setting %(key)s must be a language code in quotes, e.g. \"fr\", not "
                                 "%(value)s"), section=section, key=key, value=repr(value))
        from core.i18n import check_language

        try:
            check_language(value)
        except ValueError as exc:
            raise ConfigError(N_("%(section)s setting %(key)s: %(reason)s"), section=section, key=key,
                              reason=told(exc)) from None
        return
    if kind is tuple:
        choices = _CHOICES[key]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v in choices for v in value):
            raise ConfigError(N_("%(section)s setting %(key)s must be a list of %(choices)s, not %(value)s"),
                              section=section, key=key, choices=", ".join(map(repr, choices)), value=repr(value))
        if len(set(value)) != len(value):
            raise ConfigError(N_("%(section)s setting %(key)s names a kind twice: %(value)s"), section=section, key=key,
                              value=repr(value))
        return
    if kind is list:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ConfigError(N_("%(section)s setting %(key)s must be a list of column names, not %(value)s"),
                              section=section, key=key, value=repr(value))
        if len(value) > high:
            raise ConfigError(N_("%(section)s setting %(key)s has %(n)s names; at most %(max)s"), section=section,
                              key=key, n=len(value), max=f"{high:g}")
        for v in value:
            if not any(c.isalnum() for c in v) or len(v) > 64:
                raise ConfigError(N_("%(section)s setting %(key)s: %(value)s is not a column name "
                                     "(1-64 characters, a letter or digit among them)"),
                                  section=section, key=key, value=repr(v))
        return
    if kind is str:  # a time of day, "HH:MM"
        hours, _, minutes = value.partition(":") if isinstance(value, str) else ("", "", "")
        if not (hours.isdigit() and minutes.isdigit() and len(minutes) == 2 and len(hours) <= 2
                and low <= int(hours) * 60 + int(minutes) <= high and int(minutes) < 60):
            raise ConfigError(N_("%(section)s setting %(key)s must be a time of day like \"07:00\", not %(value)s"),
                              section=section, key=key, value=repr(value))
        return
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(N_("%(section)s setting %(key)s must be true or false, not %(value)s"),
                              section=section, key=key, value=repr(value))
        return
    # bool is an int in Python; `settle_time = true` is still a mistake.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(N_("%(section)s setting %(key)s must be a number, not %(value)s"), section=section, key=key,
                          value=repr(value))
    if kind is int and not float(value).is_integer():
        raise ConfigError(N_("%(section)s setting %(key)s must be a whole number, not %(value)s"), section=section,
                          key=key, value=repr(value))
    if value != value or (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(N_("%(section)s setting %(key)s = %(value)s is out of range (%(low)s to %(high)s)"),
                          section=section, key=key, value=repr(value), low=f"{low:g}", high=f"{high:g}")


def _check_column_names(config: "InboxConfig") -> None:
    """One name in two of the lists would make a column both the id and the text (or a phone)."""
    from core.rules.columns import norm

    seen: dict[str, str] = {}
    for key in _NAME_LISTS:
        for name in getattr(config, key):
            other = seen.setdefault(norm(name), key)
            if other != key:
                raise ConfigError(N_("inbox setting %(key)s: %(name)s is already in %(other)s; a column is one of them"),
                                  key=key, name=repr(name), other=other)


def read_toml(path: Path) -> dict:
    """The whole config file as a dict; an absent file is an empty config."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(N_("%(path)s: not valid TOML: %(reason)s"), path=str(path), reason=str(exc)) from exc
    except OSError as exc:
        raise ConfigError(N_("%(path)s: cannot read: %(reason)s"), path=str(path), reason=exc.strerror) from exc


def read_section(config_path: Path, section: str, known) -> tuple[dict, str]:
    """One ``[section]`` of the file with only ``known`` keys, and the ``where`` its errors name
    (``config.toml [backup]``); a section that is not a table, or an unknown key, is an error."""
    table = read_toml(config_path).get(section, {})
    if not isinstance(table, dict):
        raise not_a_table(config_path, section)
    where = f"{config_path} [{section}]"
    for key in table:
        if key not in known:
            raise ConfigError(N_("%(where)s: unknown setting %(key)s (known: %(known)s)"), where=where, key=repr(key),
                              known=", ".join(known))
    return table, where


def folder_setting(table: dict, where: str, section: str) -> str | None:
    """A section's ``dir``: a folder path, or None when unset."""
    folder = table.get("dir")
    if folder is not None and (not isinstance(folder, str) or not folder.strip()):
        raise ConfigError(N_("%(where)s: %(section)s setting dir must be a folder path, not %(value)s"), where=where,
                          section=section, value=repr(folder))
    return folder


def checked(table: dict, where: str, section: str, keys) -> None:
    """Each of ``keys`` the section sets, against the rules table; the error names the file."""
    try:
        for key in keys:
            if key in table:
                check_setting(key, table[key], section=section)
    except ValueError as exc:
        raise _within(where, exc) from None


def not_a_table(config_path: Path, section: str) -> ConfigError:
    return ConfigError(N_("%(path)s: '%(section)s' must be a table ([%(section)s])"), path=str(config_path),
                       section=section)


def load_inbox_config(config_path: Path, overrides: Mapping[str, Any] | None = None) -> InboxConfig:
    """``[inbox]`` from the file, then ``overrides`` (flags left unset are ``None`` and ignored)."""
    doc = read_toml(config_path)
    table = doc.get("inbox", {})
    if not isinstance(table, dict):
        raise not_a_table(config_path, "inbox")
    config = InboxConfig.from_mapping(table, where=f"{config_path} [inbox]")
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    if given:
        where = Twofold("command line", lambda: _("command line"))
        config = InboxConfig.from_mapping({**dataclasses.asdict(config), **given}, where=where)
    return config


@dataclass(frozen=True)
class ConsoleConfig:
    """``[console]``: ``unlock_minutes`` is how long an operator's unlocked signing key stays
    unlocked without a signature (0: ask for the passphrase every time)."""

    unlock_minutes: float = 15.0
    keys: Mapping[str, str] = dataclasses.field(default_factory=dict)  # [console.keys]: action id -> key(s)
    language: str | None = None  # None: the environment's language (core.i18n.choose)

    def __post_init__(self) -> None:
        check_setting("unlock_minutes", self.unlock_minutes, section="console")
        if self.language is not None:
            check_setting("language", self.language, section="console")
        if not isinstance(self.keys, dict):
            raise ConfigError(N_("'keys' must be a table ([console.keys]) of action id = \"key\""))
        for action_id, key in self.keys.items():
            if not isinstance(key, str):
                raise ConfigError(N_("[console.keys] %(action)s must be a key name in quotes, e.g. \"ctrl+q\", not "
                                     "%(value)s"), action=action_id, value=repr(key))


def load_console_config(config_path: Path) -> ConsoleConfig:
    table = read_toml(config_path).get("console", {})
    if not isinstance(table, dict):
        raise not_a_table(config_path, "console")
    for key in table:
        if key not in ("unlock_minutes", "keys", "language"):
            raise ConfigError(N_("%(where)s: unknown setting %(key)s (known: %(known)s)"),
                              where=f"{config_path} [console]", key=repr(key), known="keys, language, unlock_minutes")
    try:
        return ConsoleConfig(**table)
    except ValueError as exc:
        raise _within(f"{config_path} [console]", exc) from None


@dataclass(frozen=True)
class SigningConfig:
    """``[signing]``: ``countersign`` lists the kinds of action (retention, gateway, operator)
    that wait for a second admin's approval; a held request expires after ``countersign_hours``."""

    countersign: tuple[str, ...] = ()
    countersign_hours: float = 72.0

    def __post_init__(self) -> None:
        for f in fields(self):
            check_setting(f.name, getattr(self, f.name), section="signing")
        object.__setattr__(self, "countersign", tuple(self.countersign))  # TOML gives a list


def load_signing_config(config_path: Path) -> SigningConfig:
    table = read_toml(config_path).get("signing", {})
    if not isinstance(table, dict):
        raise not_a_table(config_path, "signing")
    return from_table(SigningConfig, table, f"{config_path} [signing]")


def store_target(home, given: str | None = None) -> str:
    """Which store to open: ``--db``, then ``$USSD_CONSOLE_DB``, then ``db = "..."`` at the top of
    ``<home>/config.toml``, then ``<home>/receiver.db``. A relative SQLite path is under the home."""
    import os

    from core.store.backend import is_postgres_url

    chosen = given or os.environ.get("USSD_CONSOLE_DB") or read_toml(home.config).get("db")
    if chosen is None:
        return str(home.db)
    if not isinstance(chosen, str) or not chosen.strip():
        raise ConfigError(N_("%(path)s: db must be a SQLite path or a postgresql:// URL, not %(value)s"),
                          path=str(home.config), value=repr(chosen))
    if is_postgres_url(chosen) or chosen == ":memory:" or os.path.isabs(chosen):
        return chosen
    return str(home.root / chosen)


@dataclass(frozen=True)
class LogConfig:
    """``[logs]``: the home's log rotates at ``max_bytes``, keeping ``backups`` old files
    (``receiver.log.1`` ...); ``max_bytes = 0`` never rotates (for an outside logrotate)."""

    max_bytes: int = 10 * 1024 * 1024
    backups: int = 5

    def __post_init__(self) -> None:
        for key, (low, high) in {"max_bytes": (0, 2**40), "backups": (0, 1000)}.items():
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(N_("%(section)s setting %(key)s must be a whole number, not %(value)s"),
                                  section="logs", key=key, value=repr(value))
            if not low <= value <= high:
                raise ConfigError(N_("%(section)s setting %(key)s = %(value)s is out of range (%(low)s to %(high)s)"),
                                  section="logs", key=key, value=repr(value), low=low, high=high)
        if 0 < self.max_bytes < 4096:
            raise ConfigError(N_("logs setting max_bytes = %(value)s is too small (0, or at least 4096)"),
                              value=self.max_bytes)


def load_log_config(config_path: Path) -> LogConfig:
    table = read_toml(config_path).get("logs", {})
    if not isinstance(table, dict):
        raise not_a_table(config_path, "logs")
    return from_table(LogConfig, table, f"{config_path} [logs]")
