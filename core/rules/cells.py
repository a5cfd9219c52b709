"""What a cell of an export may hold: no formula a spreadsheet would run, no phone number.

Pure functions for the exports (CSV and .xlsx). Spreadsheets run a cell that
starts with ``=``, ``+``, ``-`` or ``@`` (and some read a leading tab or
carriage return the same way), so such text gets a leading apostrophe, the
usual "this is text" mark. Free text that came from outside (reasons, file
names, reject lines) has phone-number-like digit runs masked, as everywhere
the receiver keeps text (docs/rules.md): no valid frame has such a run.
"""

from __future__ import annotations

import re

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# 8 or more digits, with or without a leading +, with spaces or dashes between groups.
PHONE_RUN = re.compile(r"\+?\d(?:[ \-]?\d){7,}")
PHONE_MASK = "[phone]"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def guard(text: str) -> str:
    """Text a spreadsheet shows as text, never runs."""
    return "'" + text if text.startswith(FORMULA_START) else text


def _mask(match: re.Match) -> str:
    run = match.group(0)
    return run if _DATE.match(run) else PHONE_MASK  # "served 2024-05-02" keeps its date


def mask_phones(text: str) -> str:
    return PHONE_RUN.sub(_mask, text)


def outside_text(value: object) -> str:
    """Free text from outside, ready for a cell: phone runs masked, then guarded."""
    return guard(mask_phones("" if value is None else str(value)))
