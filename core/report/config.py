"""``[report]`` in config.toml: ``watch`` writes the situation report on a schedule.

::

    [report]
    every = "1d"         # a report of the last day, once a day ("12h", "7d"; seconds as a number)
    at = "07:00"         # made at this time of day (then every `every` after it)
    dir = "reports"      # where they go (relative: under the home); default <home>/reports
    keep = 30            # reports kept in the folder (an HTML and a PDF each); older ones go

A bad value names its key when ``watch`` starts (the rules are ``core.config``'s table).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from core.config import check_setting, checked, folder_setting, read_section
from core.i18n import N_, MarkedError

from .period import span_seconds

KNOWN = ("every", "at", "dir", "keep")



class ReportConfigError(MarkedError, ValueError):
    """A ``[report]`` value that does not read; the message names its key, for the operator."""


@dataclass(frozen=True)
class ReportConfig:
    every: float | None = None  # None: watch writes no scheduled reports
    at: str | None = None  # None: every `every` from the last report
    dir: str | None = None  # None: <home>/reports
    keep: int = 30

    def folder(self, home) -> Path:
        if not self.dir:
            return Path(home.root) / "reports"
        path = Path(self.dir).expanduser()
        return path if path.is_absolute() else Path(home.root) / path

    def last_slot(self, now: float) -> float | None:
        """The latest scheduled time at or before ``now`` (with ``at``), or None (without it)."""
        if self.every is None or self.at is None:
            return None
        hours, minutes = (int(x) for x in self.at.split(":"))
        today = dt.datetime.fromtimestamp(now).replace(hour=hours, minute=minutes, second=0, microsecond=0)
        anchor = today.timestamp()
        return anchor + ((now - anchor) // self.every) * self.every


def _every(value, where: str) -> float:
    if isinstance(value, str):
        seconds = span_seconds(value)
        if seconds is None:
            raise ReportConfigError(N_('%(where)s: report setting every must be a span like "1d", "12h" or '
                                       '"30m", not %(value)s'), where=where, value=repr(value))
        value = seconds
    try:
        check_setting("every", value, section="report")
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    return float(value)


def load_report_config(config_path: Path) -> ReportConfig:
    table, where = read_section(config_path, "report", KNOWN)
    folder = folder_setting(table, where, "report")
    checked(table, where, "report", ("at", "keep"))
    every = _every(table["every"], where) if "every" in table else None
    return ReportConfig(every=every, at=table.get("at"), dir=folder, keep=int(table.get("keep", 30)))
