"""The report's period from what an operator types: ``24h``, ``7d`` or a date, pure."""

from __future__ import annotations

import datetime as dt
import re
from typing import NamedTuple

from core.i18n import N_, MarkedError

DATE_FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M")
_SPAN = re.compile(r"^\s*(\d{1,7})\s*([smhdw])\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class ReportError(MarkedError, ValueError):
    """A report's period or format that does not read; the message is for the operator."""


class Period(NamedTuple):
    since: float
    until: float
    site: str | None = None


def span_seconds(text: str) -> int | None:
    """``30s``, ``90m``, ``24h``, ``7d``, ``2w`` in seconds; None for anything else."""
    found = _SPAN.match(text or "")
    return int(found.group(1)) * _UNIT[found.group(2)] if found and int(found.group(1)) > 0 else None


def _date(text: str, end: bool) -> float:
    for fmt in DATE_FORMATS:
        try:
            when = dt.datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
        if end and fmt == "%Y-%m-%d":
            when += dt.timedelta(days=1)  # a bare date as the end includes that whole day
        return when.timestamp()
    raise ReportError(N_("%(text)s is not a period like 24h or 7d, nor a date like 2026-12-01 or 2026-12-01 "
                         "07:00"), text=repr(text))


def parse_period(since: str | None, until: str | None, now: float, site: str | None = None) -> Period:
    """``[since, until)``: ``since`` a span back from ``until`` or a date (default 24h); ``until`` a
    date (default now). A period that ends before it starts is an error, not an empty report."""
    end = now if not until else _date(until, end=True)
    span = span_seconds(since or "24h")
    start = end - span if span is not None else _date(since, end=False)
    if start >= end:
        raise ReportError(N_("the period starts (%(since)s) at or after it ends (%(until)s)"),
                          since=since, until=until or "now")
    site = (site or "").strip() or None
    return Period(start, end, site)
