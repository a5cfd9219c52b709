"""Outside text made safe to store, log and show: one escape, one one-line error.

Pure functions. Anything that came from outside (ids, frames, file names,
error messages that quote them) passes through ``escape_text`` before it is
stored or shown, so no control sequence reaches a terminal or a log line.
"""

from __future__ import annotations


def escape_text(value: object, limit: int = 200) -> str:
    """A bounded, printable-ASCII rendering of untrusted input for storage and display.

    Control bytes, non-ASCII characters and backslashes are written as escapes,
    so no terminal control sequence survives and the original is recoverable.
    """
    if isinstance(value, bytes):
        value = value.decode("utf-8", "backslashreplace")
    s = str(value)
    if s.isascii() and s.isprintable() and "\\" not in s:  # nothing to escape: the loop below, in C
        return s if len(s) < limit else s[:limit] + "..."
    out = []
    size = 0
    for ch in s:
        if ch == "\\":
            piece = "\\\\"
        elif " " <= ch <= "~":
            piece = ch
        else:
            piece = ch.encode("unicode_escape").decode("ascii")
        out.append(piece)
        size += len(piece)
        if size >= limit:
            out.append("...")
            break
    return "".join(out)


def one_line(exc: BaseException, limit: int = 500) -> str:
    """An error as one escaped line: its first line, or its class name when it says nothing."""
    text = str(exc).strip().splitlines()
    return escape_text(text[0], limit) if text else exc.__class__.__name__
