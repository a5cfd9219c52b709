"""Outside text made safe to store, log and show: one escape, one one-line error.

Pure functions. Anything that came from outside (ids, frames, file names,
error messages that quote them) passes through ``escape_text`` before it is
stored or shown, so no control sequence reaches a terminal or a log line.
"""

from __future__ import annotations

from core.i18n import MarkedError, _


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


class Said(str):
    """Words this program says, in the operator's language, with any outside text in them made
    ``plain`` already: shown as they are (``console.render.safe`` does not escape them again), so
    the language's own letters (é, ã, ñ) stay letters. Anything made from one (an f-string, a
    join) is a plain ``str`` again, and is escaped where shown."""

    __slots__ = ()


def plain(value: object, limit: int = 200) -> str:
    """Outside text to put into a sentence a person reads (a signing preview's line): printable
    ASCII as it is, bounded; anything else through ``escape_text``. Text the store keeps already
    escaped is so shown once-escaped, not doubly, and the sentence's own words, in the operator's
    language, need no escaping where the line is shown."""
    s = str(value)
    if s.isascii() and s.isprintable():
        return s if len(s) <= limit else s[:limit] + "..."
    return escape_text(s, limit)


class Twofold(str):
    """A value put into an error's words that is English in its ``str`` (logs, ``--json``) and
    said in the operator's language where ``said`` shows the error (a retention's "3 days")."""

    def __new__(cls, english: str, words) -> Twofold:
        made = super().__new__(cls, english)
        made.words = words  # () -> the same in the operator's language, our words only
        return made


def worded(message: str, **values: object) -> Twofold:
    """Our words as data and as said: ``message % values`` in English in the ``str`` (``--json``, the
    log, a manifest), the operator's language through ``in_language``. ``message`` is marked with
    ``N_`` where it is written; ``values`` are escaped already, and a ``Twofold`` among them is said
    in the language too."""
    return Twofold(message % values, lambda: _(message, **said_values(values)))


def english(message: str, **values: object) -> str:
    """``_`` for words kept in English: ``message`` as written, its values put in."""
    return message % values if values else message


def english_ngettext(singular: str, plural: str, n: int, /, **values: object) -> str:
    """``ngettext`` for words kept in English."""
    return (singular if n == 1 else plural) % values


def told(exc: BaseException) -> Twofold:
    """An error put into other words as a value: its English line as data, ``said`` where shown."""
    return Twofold(str(exc), lambda: said(exc))


def said_values(values: dict) -> dict:
    """``values`` for words in the operator's language: each ``Twofold`` among them said in it too."""
    return {k: v.words() if isinstance(v, Twofold) else v for k, v in values.items()}


def in_language(value: object) -> object:
    """A ``Twofold`` as the operator's language says it (a ``Said``, shown as it is); anything else
    as it is. Where a person reads a value whose ``str`` is the English kept as data."""
    return Said(value.words()) if isinstance(value, Twofold) else value


def one_line(exc: BaseException, limit: int = 500) -> str:
    """An error as one escaped line: its first line, or its class name when it says nothing."""
    text = str(exc).strip().splitlines()
    return escape_text(text[0], limit) if text else exc.__class__.__name__


def said(exc: BaseException, limit: int = 500) -> str:
    """An error as one line in the operator's language: a ``MarkedError``'s message translated and
    filled with its values made ``plain`` (a number as it is); an error whose words are a ``Said``
    (``console.errors.CommandError.told``) as they are; any other error, or one whose words were one
    finished string, as ``one_line`` gives it (English, escaped)."""
    if isinstance(exc, MarkedError) and isinstance(exc.message, str) and exc.message:
        values = {k: v if isinstance(v, (int, float, Said)) else Said(v.words()) if isinstance(v, Twofold)
                  else plain(v, 300) for k, v in exc.values.items()}
        text = _(exc.message, **values)
        if values or text != exc.message:
            return _first_line(text, exc, limit)
    if exc.args and isinstance(exc.args[0], Said):  # our words in the language, their outside text made plain
        return _first_line(exc.args[0], exc, limit)
    return one_line(exc, limit)


def _first_line(text: str, exc: BaseException, limit: int) -> str:
    lines = text.strip().splitlines()
    return Said(lines[0][:limit]) if lines else exc.__class__.__name__
