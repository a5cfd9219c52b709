"""No phone number at rest: the one mask for every stored text (pure).

A digit run that looks like a phone number (8 or more digits, with or without a
leading ``+``) is replaced by ``[phone]`` in every text the receiver keeps that
is not a frame: reject rows, file names, ``.reason`` files, archive and
rejected copies, log lines, exports. Between its groups people write what a
keyboard or a phone's contact card gives them, so up to three of: spaces of any
kind (a tab, a non-breaking space), dashes (``-`` and the Unicode ones), dots
and brackets round an area code: ``+254 712 345 678``, ``0712-34-5678``,
``0712.345.678``, ``(0712) 345678``. A line break never joins two groups: a
file's lines are separate texts.

A valid frame holds such a run only as its site (1-8 letters or digits, so
``H1|1|12345678|MED|...``): eight digits between ``|`` right after ``H1|<seq>|`` and
before ``|<need>|`` are a site and kept; its other numeric fields are 1-6 digits
between ``|``, which never join. So the mask never touches a frame. Two shapes of 8 digits are left
alone because nobody dials them: an ISO date (``2024-05-01``, with a time; a
real month and day, and not continued by more digits, so ``0712-34-5678`` is
no date) and an IPv4 address (four dotted parts of at most 255).
"""

from __future__ import annotations

import re

MASK = "[phone]"

# One separator: horizontal white space, a dash of any kind, a dot, a bracket. Never a line break.
_SEP_STR = r"(?:(?![\r\n])[\s.()\-\u2010-\u2015])"
# In raw bytes the same set as UTF-8 spells it: ASCII, U+00A0, U+2000-U+200A, U+2010-U+2015,
# U+202F, U+205F and U+3000 (a Latin-1 file's 0xA0 alone, too).
_SEP_BYTES = rb"(?:[\t\x0b\x0c .()\-\xa0]|\xc2\xa0|\xe2\x80[\x80-\x8a\x90-\x95\xaf]|\xe2\x81\x9f|\xe3\x80\x80)"

_DATE = r"(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?:[ T]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?)?"
_IPV4 = r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}"


# A frame's site of eight digits: between "|" and "|<need>|"; _SITE_BEFORE checks the nine characters
# before it (at most eight are "H1|<seq>|", so the ninth says whether H1 starts a word).
_SITE = r"(?<=\|)\d{8}(?=\|[A-Z]{3}\|)"
_SITE_BEFORE = re.compile(r"(?:^|[^A-Za-z0-9])H1\|\d{1,4}\|\Z")
_SITE_BEFORE_BYTES = re.compile(_SITE_BEFORE.pattern.encode())


def _pattern(sep: str, date: str, ipv4: str, digit: str, plus: str) -> str:
    # A kept shape must end where the digits end: "2024-05-01" followed by "-78" or "5" is not a date.
    end = rf"(?!{digit})(?![.\-]{digit})"
    return (rf"(?P<date>{date}){end}|(?P<ip>{ipv4}){end}|(?P<site>{_SITE})"
            rf"|(?P<run>{plus}?\(?{digit}(?:{sep}{{0,3}}{digit}){{7,}})")


_RUN = re.compile(_pattern(_SEP_STR, _DATE, _IPV4, r"\d", r"\+"))
_RUN_BYTES = re.compile(_pattern(_SEP_BYTES.decode("latin-1"), _DATE, _IPV4, r"\d", r"\+").encode("latin-1"))
# Is there anything to mask at all? A looser test than a run (a line break passes), and cheap: it
# runs on every reject's texts.
_DIGITS8 = re.compile(r"\d(?:[\s.()\-\u2010-\u2015]{0,3}\d){7}")

# Bytes that may belong to a run: a reader that masks a stream in chunks keeps a chunk's tail of
# these for the next chunk, so a number cut by a chunk's end is still masked whole.
RUN_BYTES = frozenset(b"0123456789+\t\x0b\x0c .()-\xa0\xc2\xe2\xe3\x80\x81\x9f" + bytes(range(0x80, 0xb0)))


def _ip_kept(address: str) -> bool:
    return all(int(part) <= 255 for part in address.split("."))


def _masked(m: re.Match) -> str:
    if m.group("date") is not None:
        return m.group(0)
    if m.group("site") is not None:
        return m.group(0) if _SITE_BEFORE.search(m.string[max(0, m.start() - 9):m.start()]) else MASK
    ip = m.group("ip")
    if ip is not None and (_ip_kept(ip) or sum(c.isdigit() for c in ip) < 8):
        return ip
    return MASK


def _masked_bytes(m: re.Match) -> bytes:
    if m.group("date") is not None:
        return m.group(0)
    if m.group("site") is not None:
        return m.group(0) if _SITE_BEFORE_BYTES.search(m.string[max(0, m.start() - 9):m.start()]) else MASK.encode()
    ip = m.group("ip")
    if ip is not None and (_ip_kept(ip.decode()) or sum(c in b"0123456789" for c in ip) < 8):
        return ip
    return MASK.encode()


def mask_phones(text: str) -> str:
    """``text`` with every phone-like digit run replaced by ``[phone]``."""
    if _DIGITS8.search(text) is None:  # the common case: nothing to mask, no copy made
        return text
    return _RUN.sub(_masked, text)


def mask_phones_bytes(data: bytes) -> bytes:
    """The same mask over raw bytes (a rejected copy that is not text)."""
    return _RUN_BYTES.sub(_masked_bytes, data)


def has_phone(text: str) -> bool:
    return mask_phones(text) != text
