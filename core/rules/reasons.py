"""Every reason code a verdict, a reject or a conflict carries, in words: the one table.

The codes (``no_text``, ``bad_trailer``, ``same_frame_id_different_payload``) stay exact in
``--json``, the store, exports and the operator's guide (docs/operator.md); wherever a person
reads a reason (the command line's tables, the console's Activity and Quarantine screens, the
reject dialog, a signing preview) it is shown through ``reason_words``. ``short`` is the same
meaning in fewer words, for the console's narrow columns. A new reason is a new row here: a
test walks the code that makes reasons and fails on any code this table does not name.
"""

from __future__ import annotations

from typing import NamedTuple


class Words(NamedTuple):
    long: str
    short: str = ""  # none: the long words are short enough for the console too


REASONS: dict[str, Words] = {
    # A frame that was taken in (APPLIED) or counted as a duplicate (core/rules/decide.py).
    "new": Words("new case"),
    "retransmit": Words("sent again"),
    "rerank": Words("sent again at another place in its session", "sent again, other place"),
    "after_eviction": Words("sent again after its id was forgotten", "sent again, id forgotten"),
    "resolved_earlier": Words("an operator already decided this one", "already decided"),
    # A conflict held for an operator (core/rules/decide.py).
    "same_frame_id_different_payload": Words("same frame id, different values", "same id, new values"),
    "same_case_different_payload": Words("same case, different values", "same case, new values"),
    "already_quarantined": Words("already held for an operator"),
    # A line that is not a frame (core/rules/frame.py parse).
    "bad_grammar": Words("not in the frame's form"),
    "not_ascii": Words("characters that are not plain text"),
    "too_long": Words("too long for a frame"),
    "bad_frame_id": Words("frame id is not valid"),
    "id_seq_mismatch": Words("frame id and place in session disagree"),
    "bad_trailer": Words("checksum does not match"),
    # A line or a message a reader could not turn into a frame (core/rules/columns.py, formats.py,
    # core/gateways/kinds/).
    "no_text": Words("no text after the id (an empty message)"),
    "no_frame_id": Words("a frame but no frame id"),
    "no_frame_in_text": Words("no frame in the message"),
    "bad_encoding": Words("not UTF-8 text (shown escaped)"),
    "control_byte": Words("a control character in the line"),
    "bad_csv_record": Words("a CSV row that cannot be read"),
    "not_json": Words("not a JSON object"),
}


def reason_words(code: str | None, short: bool = False) -> str:
    """The reason in words; an unknown code (a newer store, an older program) is shown as it is."""
    if not code:
        return ""
    words = REASONS.get(code)
    if words is None:
        return code
    return (words.short or words.long) if short else words.long
