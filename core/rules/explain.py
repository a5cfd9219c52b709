"""Plain words for outcomes and reasons, and what exactly was wrong with a rejected line.

Pure functions. The reasons' words are one table, ``core.rules.reasons``. The codes
(``REJECT_BAD_CRC``, ``bad_grammar``) stay exact in ``--json``, the store and the operator's
guide (docs/operator.md); an operator on the screen or the command line reads these words
instead, in the operator's language. ``explain_reject`` works from the frame text as the store
keeps it (escaped) and the reason code, so it can explain a reject long after it arrived.
"""

from __future__ import annotations

import re

from core.i18n import N_, _, number

from .cksum import trailer
from .frame import FRAME_ID_RE, MAX_FRAME_CHARS
from .reasons import REASONS, reason_words  # noqa: F401 - reason_words is this module's API too
from .text import Said, english, escape_text, plain

OUTCOME_WORDS = {  # English, as the codes' docs say them; shown translated (``outcome_words``)
    "APPLIED": N_("applied"),
    "DUPLICATE": N_("duplicate"),
    "CONFLICT_QUARANTINED": N_("conflict, held"),
    "REJECT_BAD_FORMAT": N_("rejected: not a frame"),
    "REJECT_BAD_CRC": N_("rejected: bad checksum"),
}

REASON_WORDS = {code: words.long for code, words in REASONS.items()}  # the table is in reasons.py

NO_FRAME_ID = N_("this message has a frame but no frame id; a gateway's message id changes with every "
                 "re-send, so it cannot stand in (send it as '<frame_id> <frame>', or name the frame id "
                 "column in config.toml [inbox] id_columns)")

# The frame's seven fields, what each must be, and its check (the words translated where shown).
FIELDS = [
    (N_("version"), "H1", re.compile(r"H1")),
    (N_("place in session"), N_("1-4 digits"), re.compile(r"[0-9]{1,4}")),
    (N_("site"), N_("1-8 letters or digits"), re.compile(r"[A-Za-z0-9]{1,8}")),
    (N_("need"), N_("3 capital letters"), re.compile(r"[A-Z]{3}")),
    (N_("people"), N_("1-6 digits"), re.compile(r"[0-9]{1,6}")),
    (N_("priority"), N_("1-3 digits"), re.compile(r"[0-9]{1,3}")),
    (N_("checksum"), N_("# and 2 hex digits"), re.compile(r"#[0-9A-Fa-f]{2}")),
]


def outcome_words(code: str) -> str:
    """An outcome in the operator's language (``Said``); an unknown code escaped."""
    if code in OUTCOME_WORDS:
        return Said(_(OUTCOME_WORDS[code]))
    return escape_text(code, 64)


def _quote(value: str, limit: int = 24) -> str:
    return "'" + plain(value if len(value) <= limit else value[:limit] + "...") + "'"


def _grammar(text: str, say) -> str:
    fields = text.split("|")
    if len(fields) != len(FIELDS):
        return say(N_("expected %(want)s fields, got %(n)s"), want=len(FIELDS), n=len(fields))
    for (name, rule, pattern), value in zip(FIELDS, fields):
        if not pattern.fullmatch(value):
            if not value:
                return say(N_("%(field)s is empty"), field=say(name))
            return say(N_("%(field)s must be %(rule)s, got %(value)s"), field=say(name), rule=say(rule),
                       value=_quote(value))
    return say(REASON_WORDS["bad_grammar"])


def explain_reject(frame_id: str | None, text: str | None, reason: str | None) -> str:
    """What was wrong with one rejected line, in the operator's words (``Said``: the frame's text in
    it is made plain), e.g. "expected 7 fields, got 5" or "checksum says #70, frame says #89"."""
    return Said(_explain(frame_id, text, reason, _))


def explain_in_english(frame_id: str | None, text: str | None, reason: str | None) -> str:
    """The same in English, for a refusal whose own words are English yet (``core.rules.compose``)."""
    return _explain(frame_id, text, reason, english)  # the sentences are marked N_; ``_`` says them translated


def _explain(frame_id: str | None, text: str | None, reason: str | None, say) -> str:
    text = (text or "").strip()
    frame_id = frame_id or ""
    if reason == "bad_trailer":
        body, _sep, carried = text.rpartition("|#")
        if body:
            return say(N_("checksum says #%(want)s, frame says #%(got)s"), want=trailer(body),
                       got=plain(carried.lower(), 8))
    elif reason == "bad_grammar":
        return _grammar(text, say)
    elif reason == "too_long":
        return say(N_("%(n)s characters; a frame has at most %(most)s"), n=number(len(text)),
                   most=MAX_FRAME_CHARS)
    elif reason == "not_ascii":
        return say(N_("holds characters that are not plain text (shown escaped)"))
    elif reason == "bad_frame_id":
        if not frame_id:
            return say(N_("no frame id"))
        if not FRAME_ID_RE.fullmatch(frame_id):
            return say(N_("frame id %(id)s is not 1-64 letters, digits or . _ : -"), id=_quote(frame_id))
    elif reason == "no_frame_id":
        return say(NO_FRAME_ID)
    elif reason == "id_seq_mismatch":
        fields = text.split("|")
        tail = frame_id.rpartition("-")[2]
        if len(fields) > 1:
            return say(N_("frame id ends in -%(tail)s, frame says place %(place)s"), tail=plain(tail, 8),
                       place=plain(fields[1], 8))
    return say(REASONS[reason].long) if reason in REASONS else escape_text(reason or "", 64)
