"""The words an operator reads, in the operator's language: gettext catalogs made with Babel.

The catalogs are the ``.po`` files under ``core/locale/<lang>/LC_MESSAGES/ussd.po``, shipped as
package data and read when a language is first used (no built ``.mo`` is kept anywhere). A
message with no translation, an empty one or a fuzzy one is shown in English, never blank.

``_("...%(name)s...", name=value)`` and ``ngettext(one, many, n, n=number(n))`` are the two
marks ``make translations`` extracts; placeholders are named so a translator may move them.
Only ``select`` changes the language, once per run, before anything is shown: ``--json``,
codes, exit codes, config keys and what a signature covers never pass through here.
"""

from __future__ import annotations

import datetime as dt
import functools
import gettext
import io
import os
from pathlib import Path
from typing import Mapping

DOMAIN = "ussd"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
SOURCE = "en"  # the language the messages are written in: it has no catalog
ENV_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")  # gettext's order


def catalog_path(lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


@functools.cache
def shipped() -> tuple[str, ...]:
    """English and every language with a catalog in the installed package, sorted."""
    found = [p.name for p in LOCALE_DIR.iterdir() if catalog_path(p.name).is_file()] if LOCALE_DIR.is_dir() else []
    return (SOURCE, *sorted(found))


def _base(tag: str) -> str:
    """``fr_FR.UTF-8``, ``fr-FR``, ``fr@euro`` -> ``fr``."""
    for sep in ".@_-":
        tag = tag.split(sep, 1)[0]
    return tag.strip().lower()


def check_language(tag: str) -> str:
    """The shipped language ``tag`` names, or ``UnknownLanguage`` naming the shipped ones."""
    lang = _base(str(tag))
    if lang not in shipped():
        raise UnknownLanguage(N_("unknown language %(given)s; the shipped languages are %(shipped)s"),
                              given=repr(str(tag)), shipped=", ".join(shipped()))
    return lang


def from_environment(environ: Mapping[str, str]) -> str:
    """The language the first set variable of ``ENV_VARS`` names (``LANGUAGE`` may list several,
    the first shipped one wins); English when it names none that ships (C and POSIX included)."""
    for var in ENV_VARS:
        value = environ.get(var, "")
        if not value:
            continue
        for part in value.split(":"):
            lang = _base(part)
            if lang in ("c", "posix"):
                return SOURCE
            if lang in shipped():
                return lang
        return SOURCE
    return SOURCE


def choose(flag: str | None, configured: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """``--lang``, else ``[console] language``, else the environment, else English."""
    if flag:
        return check_language(flag)
    if configured:
        return check_language(configured)
    return from_environment(environ)


@functools.cache
def _translations(lang: str) -> gettext.NullTranslations:
    """The catalog of ``lang`` as gettext reads it; untranslated and fuzzy entries left out, so
    gettext answers them with the English msgid."""
    if lang == SOURCE:
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with open(catalog_path(lang), "rb") as fh:
        catalog = read_po(fh, locale=lang, domain=DOMAIN)
    for message in list(catalog):
        if not message.id:
            continue
        forms = message.string if isinstance(message.string, tuple) else (message.string,)
        if message.fuzzy or not all(forms):
            del catalog[message.id]
    buf = io.BytesIO()
    write_mo(buf, catalog)
    buf.seek(0)
    return gettext.GNUTranslations(buf)


_current = SOURCE


def select(lang: str) -> None:
    """Use ``lang`` (already checked) for everything shown from now on in this process."""
    global _current
    _current = lang


def language() -> str:
    return _current


def N_(message: str) -> str:
    """A mark for a word kept in a table and translated where it is shown (``_(TABLE[code])``)."""
    return message


def _(message: str, **values: object) -> str:
    """``message`` in the current language, its ``%(name)s`` placeholders filled from ``values``."""
    text = _translations(_current).gettext(message)
    return text % values if values else text


def ngettext(singular: str, plural: str, count: int, /, **values: object) -> str:
    """The form of ``singular``/``plural`` the current language uses for ``count``, filled from ``values``
    (the count itself usually among them, as ``n=number(count)``)."""
    text = _translations(_current).ngettext(singular, plural, count)
    return text % values if values else text


class MarkedError(Exception):
    """An error worded as a marked message (``N_("no quarantine item #%(id)s")``) and its values.

    ``str()`` is the English line, for logs and ``--json``; ``core.rules.text.said`` gives it in the
    operator's language, its values (outside text) escaped. An error made from one finished string,
    as before, is that string in every language."""

    def __init__(self, message: object = "", /, *args: object, **values: object) -> None:
        self.message, self.values = message, values
        english = message % values if values and isinstance(message, str) else message
        super().__init__(english, *args)


class UnknownLanguage(MarkedError, ValueError):
    """A language asked for by name (``--lang``, ``[console] language``) that no catalog ships. Its
    refusal is said in the environment's language, the one the run falls back to."""


def number(n: int | float) -> str:
    """A count or an amount as the current language writes it (1,234 / 1 234 / 1.234; 1.5 / 1,5)."""
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if _current == SOURCE:
        return f"{n:,}" if isinstance(n, int) else f"{n:,g}"
    from babel.numbers import format_decimal

    return format_decimal(n, locale=_current)


def moment(ts: float | None, seconds: bool = True) -> str:
    """A local date and time (to the second, else to the minute), the current language's way;
    ``-`` for none."""
    if ts is None:
        return "-"
    when = dt.datetime.fromtimestamp(ts)
    if _current == SOURCE:
        return when.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    from babel.dates import format_date, format_time

    clock = format_time(when, "medium" if seconds else "short", locale=_current)
    return f"{format_date(when, 'short', locale=_current)} {clock}"
