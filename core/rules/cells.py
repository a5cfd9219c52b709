"""What a cell of an export may hold: no formula a spreadsheet would run, no phone number.

Pure functions for the exports (CSV and .xlsx). Spreadsheets run a cell that
starts with ``=``, ``+``, ``-`` or ``@`` (and some read a leading tab or
carriage return the same way), so such text gets a leading apostrophe, the
usual "this is text" mark. Free text that came from outside (reasons, file
names, reject lines) has phone-number-like digit runs masked, as everywhere
the receiver keeps text (docs/rules.md): no valid frame has such a run.
"""

from __future__ import annotations

from .privacy import mask_phones

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def guard(text: str) -> str:
    """Text a spreadsheet shows as text, never runs."""
    return "'" + text if text.startswith(FORMULA_START) else text


def outside_text(value: object) -> str:
    """Free text from outside, ready for a cell: phone runs masked, then guarded."""
    return guard(mask_phones("" if value is None else str(value)))
