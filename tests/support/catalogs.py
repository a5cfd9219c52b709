"""The shipped catalogs held to the source: every marked word extracted as ``make translations``
extracts it (babel.cfg), and what is wrong with a catalog, entry by entry, in words."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from .helpers import ROOT

# A printf-style placeholder as gettext's python-format knows it: %(name)s, %s, %r, %d ...
PLACEHOLDER = re.compile(r"%(?:\(\w+\))?[-#0 +]*\d*(?:\.\d+)?[sdifrxXeEgGc%]")


@functools.lru_cache(maxsize=1)
def marked() -> frozenset[str | tuple[str, str]]:
    """Every message the source marks: a string, or (singular, plural) for ``ngettext``. Read once
    per process: the source does not change under a run, and each catalog's test asks for it."""
    with open(ROOT / "babel.cfg", encoding="utf-8") as fh:
        method_map, options_map = parse_mapping_cfg(fh, "babel.cfg")
    found = set()
    for _file, _line, message, _comments, _context in extract_from_dir(str(ROOT), method_map, options_map):
        found.add(tuple(message) if isinstance(message, (tuple, list)) else message)
    return frozenset(found)


def _placeholders(text: str) -> list[str]:
    return sorted(p for p in PLACEHOLDER.findall(text) if p != "%%")


def problems(po: Path, wanted: set) -> list[str]:
    """What is wrong with the catalog at ``po`` against the marked messages ``wanted``: one line per
    missing, fuzzy, untranslated or stale entry, and per translation whose placeholders (or a
    trailing newline) differ from its msgid's."""
    with open(po, "rb") as fh:
        catalog = read_po(fh)
    out = []
    have = {}
    for m in catalog:
        if m.id:
            have[tuple(m.id) if isinstance(m.id, (tuple, list)) else m.id] = m
    for key in sorted(wanted, key=str):
        m = have.get(key)
        if m is None:
            out.append(f"{po}: missing {key!r}")
            continue
        forms = list(m.string) if isinstance(m.string, (tuple, list)) else [m.string]
        source = key[1] if isinstance(key, tuple) else key
        if m.fuzzy:
            out.append(f"{po}: fuzzy {key!r}")
        if not all(forms):
            out.append(f"{po}: untranslated {key!r}")
            continue
        for form in forms:
            if _placeholders(form) != _placeholders(source):
                out.append(f"{po}: placeholders of {form!r} differ from {source!r}")
            if form.endswith("\n") != source.endswith("\n"):
                out.append(f"{po}: the newline at the end of {form!r} differs from {source!r}")
    for key in sorted(set(have) - set(wanted), key=str):
        out.append(f"{po}: {key!r} is no longer in the source (make translations drops it)")
    return out
