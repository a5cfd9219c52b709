"""No phone number at rest: the one mask for every stored text (pure).

A digit run that looks like a phone number (8 or more digits, with or without a
leading ``+``, single spaces or dashes between groups) is replaced by
``[phone]`` in every text the receiver keeps that is not a frame: reject rows,
file names, ``.reason`` files, archive and rejected copies, log lines. No valid
frame holds such a run (its numeric fields are 1-6 digits between ``|``), so
the mask never touches a frame. ISO dates (``2024-05-01``, with a time) are
left alone: they are eight digits with dashes but not a number anyone dials.
"""

from __future__ import annotations

import re

MASK = "[phone]"
_RUN = re.compile(r"(\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?)|(\+?\d(?:[ \-]?\d){7,})")
_RUN_BYTES = re.compile(rb"(\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?)|(\+?\d(?:[ \-]?\d){7,})")
_DIGITS8 = re.compile(r"\d(?:[ \-]?\d){7}")


def _keep_dates(m: re.Match) -> str:
    return m.group(1) if m.group(1) is not None else MASK


def _keep_dates_bytes(m: re.Match) -> bytes:
    return m.group(1) if m.group(1) is not None else MASK.encode()


def mask_phones(text: str) -> str:
    """``text`` with every phone-like digit run replaced by ``[phone]``."""
    if _DIGITS8.search(text) is None:  # the common case: nothing to mask, no copy made
        return text
    return _RUN.sub(_keep_dates, text)


def mask_phones_bytes(data: bytes) -> bytes:
    """The same mask over raw bytes (a rejected copy that is not text)."""
    return _RUN_BYTES.sub(_keep_dates_bytes, data)


def has_phone(text: str) -> bool:
    return mask_phones(text) != text
