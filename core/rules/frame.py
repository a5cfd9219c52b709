"""Reading one frame: grammar, bounds, identity and canonical form (docs/rules.md#the-frame).

Pure functions only. Everything that can go wrong with a line from outside
becomes a ``Rejected`` value with a short reason, never an exception, so the
caller can record it and move on. ``parse`` checks in R1's order (id, grammar,
bounds, id/seq agreement, then the trailer) and returns the first failure as
``Rejected(reason)``; keep it returning rather than raising, the batch loop and
the readers depend on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from core.i18n import N_

from .cksum import trailer

FRAME_ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,64}", re.ASCII)
_FRAME_RE = re.compile(
    r"H1\|([0-9]{1,4})\|([A-Za-z0-9]{1,8})\|([A-Z]{3})\|([0-9]{1,6})\|([0-9]{1,3})\|#([0-9A-Fa-f]{2})",
    re.ASCII,
)
_FRAME_MATCH = _FRAME_RE.fullmatch
_FRAME_ID_MATCH = FRAME_ID_RE.fullmatch
# The longest frame the grammar allows is 35 characters; anything much longer is
# rejected before a regular expression ever looks at it.
MAX_FRAME_CHARS = 64
_SURROUNDING_SPACE = " \t\r\n\x0b\x0c"

NEED_NAMES = {  # English, as --filter matches them and exports write them; shown translated (N_)
    "MED": N_("medical"),
    "SHE": N_("shelter"),
    "WAT": N_("water"),
    "FOO": N_("food"),
    "PRO": N_("protection"),
}


class Frame(NamedTuple):
    """A well-formed frame whose trailer may or may not be right.

    A named tuple rather than a frozen dataclass: it is built once per frame on
    the hot path, and tuple construction is several times cheaper.
    """

    frame_id: str
    text: str  # canonical form
    seq: int
    site: str
    need: str
    headcount: int
    pri: int
    trailer_ok: bool
    case_key: str

    @property
    def payload(self) -> tuple[str, str, int, int]:
        """What a re-rank may not change: everything but the pack rank."""
        return (self.site, self.need, self.headcount, self.pri)


class Unreadable(str):
    """A line a reader could not turn into a frame source; ``reason`` says why.

    A ``str`` (the line's masked, escaped content, for the reject row) so it
    travels through the batch like any text, but never a plain ``str``, so
    ``parse`` rejects it with its own reason (``bad_encoding``, ``not_json``, ...).
    """

    reason: str

    def __new__(cls, content: str, reason: str) -> "Unreadable":
        self = super().__new__(cls, content)
        self.reason = reason
        return self


@dataclass(frozen=True, slots=True)
class Rejected:
    """A line that is not a frame: the reason says why."""

    reason: str


def case_key(frame_id: str) -> str:
    """The ledger key of the case a frame id names.

    ``<rec_id>-<seq>`` ids name the record (so a re-ranked copy finds its case);
    opaque ids name themselves. The prefixes keep the two spaces apart.
    """
    dash = frame_id.rfind("-")
    if dash > 0 and frame_id[dash + 1 :].isdigit():
        return "rec:" + frame_id[:dash]
    return "id:" + frame_id


def is_rerankable(key: str) -> bool:
    return key.startswith("rec:")


def canonical(text: str) -> str:
    """Strip the line ending and surrounding space; lower-case the trailer hex."""
    text = text.strip(_SURROUNDING_SPACE)
    cut = text.rfind("|#")
    if cut >= 0:
        text = text[: cut + 2] + text[cut + 2 :].lower()
    return text


def parse(frame_id: object, text: object) -> Frame | Rejected:
    """Parse and check one frame. Order matters (R1): grammar first, then trailer."""
    if frame_id.__class__ is not str or not _FRAME_ID_MATCH(frame_id):
        return Rejected(text.reason if text.__class__ is Unreadable else "bad_frame_id")
    if text.__class__ is not str:
        return Rejected(text.reason if text.__class__ is Unreadable else "bad_grammar")
    if len(text) > MAX_FRAME_CHARS * 4:
        return Rejected("too_long")
    text = text.strip(_SURROUNDING_SPACE)
    if not (text.isascii() and text.isprintable()):
        return Rejected("not_ascii")
    if len(text) > MAX_FRAME_CHARS:
        return Rejected("too_long")
    m = _FRAME_MATCH(text)
    if m is None:
        return Rejected("bad_grammar")
    seq_s, site, need, head_s, pri_s, hh = m.groups()
    seq = int(seq_s)
    dash = frame_id.rfind("-")
    if dash > 0 and frame_id[dash + 1 :].isdigit():  # isdigit is safe: the id is ASCII
        if int(frame_id[dash + 1 :]) != seq:
            return Rejected("id_seq_mismatch")
        key = "rec:" + frame_id[:dash]
    else:
        key = "id:" + frame_id
    hh = hh.lower()
    body = text[:-4]
    return Frame(
        frame_id,
        body + "|#" + hh,
        seq,
        site,
        need,
        int(head_s),
        int(pri_s),
        trailer(body) == hh,
        key,
    )
