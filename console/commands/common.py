"""Helpers the sub-commands share: example epilogs, paging, dates, and plain words for
counts, times, needs and the retention."""

from __future__ import annotations

import argparse
import datetime as dt

from rich.text import Text

from console.render import safe, table, when
from core.alerts import load_alerts_config
from core.rules.frame import NEED_NAMES
from core.i18n import N_, _, moment, ngettext, number
from core.rules.retention import DAY


def examples(*lines: str) -> str:
    return _("examples:") + "\n" + "\n".join(f"  {line}" for line in lines)


def with_examples(*lines: str) -> dict:
    """``add_parser`` keywords for a help that ends with these example command lines, as written."""
    return {"epilog": examples(*lines), "formatter_class": argparse.RawDescriptionHelpFormatter}


def row_count(text: str) -> int:
    """``--limit`` and ``--offset``: a number of rows, 0 or more (to the store a negative limit
    would mean no limit at all, and a negative offset nothing)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(_("invalid int value: %(value)s", value=repr(text))) from None
    if n < 0:
        raise argparse.ArgumentTypeError(_("%(n)s is negative: a number of rows is 0 or more", n=n))
    return n


def add_paging(p, offset: bool = True, limit: int = 50) -> None:
    p.add_argument("--limit", type=row_count, default=limit, metavar="N",
                   help=_("show at most N rows (default %(limit)s)", limit=limit))
    if offset:
        p.add_argument("--offset", type=row_count, default=0, metavar="N",
                       help=_("skip the first N rows (the next page)"))


def window(what: str, offset: int, shown: int, total: int) -> str:
    """Which rows of how many a page shows, worded as the console's screens word it:
    "Cases 1-50 of 280", "Cases: none", "Cases: none at offset 999 (of 280)"."""
    if shown:
        return _("%(what)s %(first)s-%(last)s of %(total)s", what=what, first=number(offset + 1),
                 last=number(offset + shown), total=number(total))
    if not total:
        return _("%(title)s: %(none)s", title=what, none=_("none"))
    if offset >= total:
        return _("%(what)s: none at offset %(offset)s (of %(total)s)", what=what, offset=number(offset),
                 total=number(total))
    return _("%(what)s: none (of %(total)s)", what=what, total=number(total))


DATE_FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S")


def _date(text: str) -> tuple[dt.datetime, bool]:
    for fmt in DATE_FORMATS:
        try:
            return dt.datetime.strptime(text.strip(), fmt), fmt == "%Y-%m-%d"
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(_("%(value)s is not a date like %(date)s or %(time)s", value=repr(text),
                                       date="2025-05-08", time="2025-05-08 14:30"))


def date_arg(text: str) -> float:
    """A local date or time as a timestamp (the start of the day for a bare date)."""
    return _date(text)[0].timestamp()


def date_arg_end(text: str) -> float:
    """The end of the period ``text`` names: a bare date includes that whole day."""
    when_, whole_day = _date(text)
    return (when_ + (dt.timedelta(days=1) if whole_day else dt.timedelta(seconds=1))).timestamp()


def table_or_none(title: str, columns, rows, none: str | None = None, **kwargs):
    """A table, or "Title: none" when it has no rows: an empty grid reads as something that failed to load."""
    rows = list(rows)
    if rows:
        return table(title, columns, rows, **kwargs)
    return Text(_("%(title)s: %(none)s", title=title, none=none or _("none")))


def minute(ts: float | None) -> str:
    """A table's time to the minute: the seconds are in --json, the columns are for the rest."""
    return moment(ts, seconds=False)


def status_words(status: str, disputed: bool) -> Text:
    """A case's status, and "! DISPUTED" on a line of its own so that a narrow column never splits it."""
    text = Text(_(CASE_STATUS_WORDS[status]) if status in CASE_STATUS_WORDS else status)
    if disputed:
        text.append("\n" + _("! DISPUTED"), style="bold")
    return text


# A case's status (core/rules/lifecycle.py) in words; the codes are in --json.
CASE_STATUS_WORDS = {"open": N_("open"), "dispatched": N_("dispatched"), "served": N_("served"),
                     "closed": N_("closed")}


def need_words(code: str) -> Text:
    """"WAT water": the code as the frame has it, then its name in the operator's language."""
    name = NEED_NAMES.get(code)
    return Text(f"{code} {_(name)}") if name else safe(code)


def retention_length(seconds: float) -> str:
    """"30 days", "12 hours": ``core.rules.retention.describe`` in the operator's language."""
    if seconds % DAY == 0:
        days = int(seconds // DAY)
        return ngettext("%(n)s day", "%(n)s days", days, n=number(days))
    hours = seconds / 3600
    return ngettext("%(n)s hour", "%(n)s hours", int(hours) if hours.is_integer() else 2, n=number(hours))


def retention_words(policy: dict) -> str:
    """"30 days (the default)", "10 days (signed exception by alice)", "45 days (set by alice)"."""
    length = retention_length(policy["retention_seconds"])
    if policy["set_by"] == "default":
        return _("%(length)s (the default)", length=length)
    if policy["is_exception"]:
        return _("%(length)s (signed exception by %(operator)s)", length=length, operator=policy["set_by"])
    return _("%(length)s (set by %(operator)s)", length=length, operator=policy["set_by"])


def alert_targets(home) -> list[str]:
    """The home's alert targets by name, for ``status`` and ``report``; none when ``[alerts]`` is bad."""
    try:
        return sorted(load_alerts_config(home.config).targets)
    except ValueError:
        return []  # status still answers; watch and the console refuse the bad setting with its key
