"""Every reason code a verdict, a reject or a conflict carries, in words: the one table.

The codes (``no_text``, ``bad_trailer``, ``same_frame_id_different_payload``) stay exact in
``--json``, the store, exports and the operator's guide (docs/operator.md); wherever a person
reads a reason (the command line's tables, the console's Activity and Quarantine screens, the
reject dialog, a signing preview) it is shown through ``reason_words``, in the operator's language;
words kept as data (an alert's summary, an export's column) are ``in_english``. ``short`` is the same
meaning in fewer words, for the console's narrow columns. A new reason is a new row here: a
test walks the code that makes reasons and fails on any code this table does not name.
"""

from __future__ import annotations

from typing import NamedTuple

from core.i18n import N_, _

from .text import Said, escape_text


class Words(NamedTuple):
    long: str
    short: str = ""  # none: the long words are short enough for the console too


REASONS: dict[str, Words] = {
    # A frame that was taken in (APPLIED) or counted as a duplicate (core/rules/decide.py).
    "new": Words(N_("new case")),
    "retransmit": Words(N_("sent again")),
    "rerank": Words(N_("sent again at another place in its session"), N_("sent again, other place")),
    "after_eviction": Words(N_("sent again after its id was forgotten"), N_("sent again, id forgotten")),
    "resolved_earlier": Words(N_("an operator already decided this one"), N_("already decided")),
    # A conflict held for an operator (core/rules/decide.py).
    "same_frame_id_different_payload": Words(N_("same frame id, different values"), N_("same id, new values")),
    "same_case_different_payload": Words(N_("same case, different values"), N_("same case, new values")),
    "already_quarantined": Words(N_("already held for an operator")),
    # A line that is not a frame (core/rules/frame.py parse).
    "bad_grammar": Words(N_("not in the frame's form")),
    "not_ascii": Words(N_("characters that are not plain text")),
    "too_long": Words(N_("too long for a frame")),
    "bad_frame_id": Words(N_("frame id is not valid")),
    "id_seq_mismatch": Words(N_("frame id and place in session disagree")),
    "bad_trailer": Words(N_("checksum does not match")),
    # A line or a message a reader could not turn into a frame (core/rules/columns.py, formats.py,
    # core/gateways/kinds/).
    "no_text": Words(N_("no text after the id (an empty message)")),
    "no_frame_id": Words(N_("a frame but no frame id")),
    "no_frame_in_text": Words(N_("no frame in the message")),
    "bad_encoding": Words(N_("not UTF-8 text (shown escaped)")),
    "control_byte": Words(N_("a control character in the line")),
    "bad_csv_record": Words(N_("a CSV row that cannot be read")),
    "not_json": Words(N_("not a JSON object")),
}


def in_english(code: str | None, short: bool = False) -> str:
    """The reason in English words, for words kept as data (an alert's summary, ``--json``, an
    export); an unknown code (a newer store, an older program) is shown as it is."""
    if not code:
        return ""
    words = REASONS.get(code)
    if words is None:
        return code
    return (words.short or words.long) if short else words.long


def reason_words(code: str | None, short: bool = False) -> str:
    """The reason in the operator's language, for a person to read (``Said``: shown as it is); an
    unknown code escaped, as text from the store is."""
    if code in REASONS:
        return Said(_(in_english(code, short)))
    return escape_text(in_english(code, short), 64)
