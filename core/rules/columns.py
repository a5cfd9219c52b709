"""Which column (or JSON key) holds the frame id, the frame text or a phone number (pure).

Names are compared case- and space-insensitively (``Message Content``,
``message_content`` and ``MESSAGE-CONTENT`` are one name). The lists cover the
exports of common SMS platforms (RapidPro/TextIt, FrontlineSMS, Twilio,
Africa's Talking, Telerivet) and our own format; docs/admin.md lists them (inbox delivery).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from core.i18n import N_, _

from .frame import FRAME_ID_RE, Unreadable
from .privacy import mask_phones
from .text import Twofold, english

FRAME_ID_NAMES = frozenset({"frame_id", "frameid", "frame_key"})
TEXT_NAMES = frozenset({
    "frame", "frame_text", "text", "message", "message_text", "message_body", "text_message",
    "body", "content", "msg", "sms", "sms_text", "sms_body", "message_content", "sms_content",
    "msg_text", "sms_message", "message_data", "messagedata",
})
PHONE_NAMES = frozenset({
    "sender", "from", "to", "msisdn", "phone", "phone_number", "urn", "contact", "number", "mobile",
    "tel", "telephone", "originator", "recipient", "caller", "callee", "cell", "address", "src",
    "dst", "source_address", "destination", "destination_address", "from_number", "to_number",
    "wa", "wa_id", "whatsapp",
})
# A name is phone-like when any of its `_`-separated words is one of these.
PHONE_WORDS = frozenset({
    "sender", "from", "msisdn", "phone", "urn", "contact", "number", "mobile", "tel", "telephone",
    "originator", "recipient", "caller", "callee", "cell", "address", "whatsapp", "wa",
})
_PHONE_VALUE = re.compile(r"\+\d{6,15}|\d{8,15}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SEPARATOR = re.compile(r"[ \t,]+")
# "<frame_id> <frame>" inside one message text; the frame part must look like a frame.
_EMBEDDED = re.compile(r"([^\s,]+)[ \t,]+(H1\|.*)", re.S)
SPACE = " \t\r\n\x0b\x0c"


def norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lstrip("\ufeff").lower()).strip("_")


@dataclass(frozen=True)
class ColumnNames:
    """A site's own column names (``[inbox] id_columns``, ``text_columns``, ``phone_columns``),
    normalized, on top of the built-in lists; a site's name wins over a built-in one."""

    frame_id: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    phone: tuple[str, ...] = ()

    @classmethod
    def of(cls, frame_id: Iterable[str] = (), text: Iterable[str] = (), phone: Iterable[str] = ()) -> "ColumnNames":
        return cls(tuple(map(norm, frame_id)), tuple(map(norm, text)), tuple(map(norm, phone)))

    def is_text(self, n: str) -> bool:
        return n in TEXT_NAMES or n in self.text


DEFAULT_NAMES = ColumnNames()


def is_phone_name(name: str, names: ColumnNames = DEFAULT_NAMES) -> bool:
    n = norm(name)
    if n in names.frame_id or n in names.text:
        return False  # the site said what this column is
    return n in PHONE_NAMES or n in names.phone or any(word in PHONE_WORDS for word in n.split("_"))


def looks_like_phone(value: object) -> bool:
    """An MSISDN-shaped value (``+254 712 345 678``, ``tel:0712345678``, ``254712345678.0``), dates excluded."""
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        if not value.is_integer():
            return False
        value = int(value)
    if not isinstance(value, (str, int)):
        return False
    s = str(value).strip()
    if _DATE.match(s):
        return False
    if ":" in s:
        scheme, _, rest = s.partition(":")
        if scheme.isalpha():
            s = rest
    s = re.sub(r"[\s().\-/]", "", s)
    return _PHONE_VALUE.fullmatch(s) is not None


class Columns:
    """Where the frame id and the text are in a header (or a JSON object's keys).

    Only a column the sender fills with the frame id counts as one (``frame_id``,
    ``frameid``, ``frame_key``, or a name in ``id_columns``); a gateway's message
    id never does. A site's own names win over the built-in ones, and a column
    in ``phone_columns`` is never read as the id or the text.
    """

    def __init__(self, names: Iterable[str], site: ColumnNames = DEFAULT_NAMES):
        self.frame_id = self.text = None
        found = [norm(name) for name in names]
        for wanted, attr in ((site.frame_id, "frame_id"), (site.text, "text")):
            for position, n in enumerate(found):
                if n in wanted and getattr(self, attr) is None and position not in self.used:
                    setattr(self, attr, position)
        for position, n in enumerate(found):
            if position in self.used or n in site.phone:
                continue
            if n in FRAME_ID_NAMES and self.frame_id is None:
                self.frame_id = position
            elif n in TEXT_NAMES and self.text is None:
                self.text = position

    @property
    def has_id(self) -> bool:
        return self.frame_id is not None

    @property
    def used(self) -> set[int]:
        return {self.frame_id, self.text} - {None}


NO_TEXT_COLUMN = N_("no frame or text column: found %(found)s; looked for a text column such as %(names)s "
                    "(docs/admin.md)")
LOOKED_FOR = "frame, text, message, body, content, sms, message_content"


def no_text_column(found: Iterable[str]) -> dict:
    """The values of ``NO_TEXT_COLUMN``, the reason a header is refused: the columns it has (short
    enough to be kept whole in a reason; English as data, the language's words where it is said),
    and the ones looked for."""
    names = [mask_phones(norm(f))[:24] for f in found]  # [a-z0-9_] and [phone]: nothing to escape

    def listed(say) -> str:
        shown = ", ".join(name or say(N_("(blank)")) for name in names[:8])
        if len(names) > 8:
            shown = say(N_("%(names)s and %(n)s more"), names=shown, n=len(names) - 8)
        return shown or say(N_("none"))

    return {"found": Twofold(listed(english), lambda: listed(_)), "names": LOOKED_FOR}


def choose(frame_id: str | None, text: str | None, has_id_column: bool):
    """The frame id and frame of one row.

    A frame id column's value wins. Otherwise a message of the form
    ``<frame_id> <frame>`` carries its own id. Nothing else is a frame id: a
    gateway's message ``id`` is new on every re-send, and keying on it would
    count a re-sent frame twice. A bare frame with no frame id is
    ``no_frame_id``; any other text without one is ``no_frame_in_text``; never
    a ``bad_frame_id`` with the frame stored as its id.
    """
    if text is None:
        return (frame_id, Unreadable("", "no_text"))
    stripped = text.strip(SPACE)
    embedded = _EMBEDDED.fullmatch(stripped)
    if frame_id:
        if embedded and embedded.group(1) == frame_id:
            return (frame_id, embedded.group(2))
        return (frame_id, text)
    if embedded:
        return embedded.groups()
    if stripped.startswith("H1|"):
        return (None, Unreadable(text, "no_frame_id"))
    if has_id_column:
        return (None, text)  # an empty frame id cell: judged as a frame with no id
    parts = _SEPARATOR.split(stripped, maxsplit=1)
    if len(parts) == 2 and FRAME_ID_RE.fullmatch(parts[0]):
        return (parts[0], parts[1])  # "<frame_id> <something>": judged as a frame (bad grammar, ...)
    return (None, Unreadable(text, "no_frame_in_text"))


def cell(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # a spreadsheet's number cell
    return None
