"""Parsing a batch of offered frames fast: the common form in one match, re-sends parsed once.

``parse`` (``core.rules.frame``) stays the definition; these give exactly its
results for a batch at a fraction of the cost, since the ingest parses every
offered frame and a typical feed re-sends a third of them.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Sequence

from . import compiled
from .batch import Offer
from .cksum import trailer
from .frame import _FRAME_RE, _SURROUNDING_SPACE, FRAME_ID_RE, Frame, Rejected, parse

PARSE_MEMO = 200_000  # parsed (id, text) pairs remembered within one call, for its re-sends

# A frame in its common form, id and text in one match: ``parse``'s own two patterns (R1's grammar
# is written once, in ``core.rules.frame``) joined by a NUL neither allows, the text's surrounding
# space bounded so the raw text stays under ``parse``'s length limit.
_SPACE = "[" + re.escape(_SURROUNDING_SPACE) + "]{0,96}"
_COMMON_FORM = re.compile(f"(?:{FRAME_ID_RE.pattern})\x00{_SPACE}({_FRAME_RE.pattern}){_SPACE}", re.ASCII).fullmatch
_new_frame = partial(tuple.__new__, Frame)


def parse_common(frame_id: str, text: str) -> Frame | Rejected:
    """``parse(frame_id, text)`` for two plain strings, in one match for the common form (an id and a
    well-formed frame); anything else, and an id whose sequence disagrees, goes to ``parse`` itself.
    tests/test_fast_path_differential.py holds the two equal."""
    m = _COMMON_FORM(frame_id + "\x00" + text)
    if m is None:
        return parse(frame_id, text)
    whole, seq_s, site, need, head_s, pri_s, hh = m.groups()
    seq = int(seq_s)
    dash = frame_id.rfind("-")
    if dash > 0 and frame_id[dash + 1 :].isdigit():
        if int(frame_id[dash + 1 :]) != seq:
            return parse(frame_id, text)
        key = "rec:" + frame_id[:dash]
    else:
        key = "id:" + frame_id
    body, hh = whole[:-4], hh.lower()
    return _new_frame((frame_id, body + "|#" + hh, seq, site, need, int(head_s), int(pri_s), trailer(body) == hh, key))


def parse_all(chunk: Sequence[Offer], done: dict | None = None) -> list:
    """``parse`` for every offer; an exact copy of an (id, text) parsed before in this call
    (``done``: a re-send, a third of a typical feed) takes that one's result, since ``parse`` is
    pure and its results immutable. Bounded: a call of millions of frames keeps the latest only."""
    if done is None:
        done = {}
    elif len(done) > PARSE_MEMO:
        done.clear()
    if compiled.loops is not None and chunk.__class__ is list:
        return compiled.loops.parse_into(chunk, parse_common, parse)  # the loop below, in C, memo aside
    done_get = done.get
    out = []
    append = out.append
    for offer in chunk:
        frame_id, text = offer[0], offer[1]
        if frame_id.__class__ is str and text.__class__ is str:  # hashable, and no subclass
            pair = (frame_id, text)
            parsed = done_get(pair)
            if parsed is None:
                parsed = done[pair] = parse_common(frame_id, text)
            append(parsed)
        else:
            append(parse(frame_id, text))
    return out
