"""``make translations``: every marked word of ``core/`` and ``console/`` (babel.cfg) into each
shipped catalog, as ``pybabel extract`` and ``pybabel update`` would, through Babel's own API.

A new word is added empty, a changed one marked fuzzy with Babel's guess, a removed one dropped.
A catalog whose entries did not change is left as it is, so that a run with nothing new moves no
file (pybabel would still rewrite every header's date). Tells which catalogs changed and how
many entries each still needs. ``--add LANG`` first makes an empty catalog for a new language.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po, write_po

from core.i18n import DOMAIN, LOCALE_DIR, catalog_path, shipped

ROOT = Path(__file__).resolve().parents[1]


def template() -> Catalog:
    """The marked words, each with the files it is in and its translator comments."""
    with open(ROOT / "babel.cfg", encoding="utf-8") as fh:
        method_map, options_map = parse_mapping_cfg(fh, "babel.cfg")
    pot = Catalog(project="ussd-console", version="0.1.0", domain=DOMAIN)
    for filename, lineno, message, comments, context in extract_from_dir(
            str(ROOT), method_map, options_map, comment_tags=("TRANSLATORS:",)):
        pot.add(message, None, [(filename, lineno)], auto_comments=comments, context=context)
    return pot


def _entries(catalog: Catalog) -> list:
    """What a translator sees of each entry, in an order of its own (a run lists them as it walks)."""
    return sorted(((m.id, m.string, sorted(m.flags), sorted({f for f, _ in m.locations}), " ".join(m.auto_comments))
                   for m in catalog if m.id), key=repr)


def update(lang: str, pot: Catalog) -> bool:
    """Bring ``lang``'s catalog up to ``pot``; True when it changed."""
    path = catalog_path(lang)
    with open(path, "rb") as fh:
        catalog = read_po(fh, locale=lang, domain=DOMAIN)
    before = _entries(catalog)
    catalog.update(pot)
    if _entries(catalog) == before:
        return False
    out = io.BytesIO()
    write_po(out, catalog, include_lineno=False, sort_by_file=True, ignore_obsolete=True)
    path.write_bytes(out.getvalue())
    return True


def add(lang: str, pot: Catalog) -> None:
    """A new, empty catalog for ``lang`` (``pybabel init``): its plural rule from Babel's data."""
    path = catalog_path(lang)
    if path.exists():
        raise SystemExit(f"{path} is there already")
    catalog = Catalog(locale=lang, domain=DOMAIN, project="ussd-console", version="0.1.0")
    catalog.update(pot)
    path.parent.mkdir(parents=True)
    out = io.BytesIO()
    write_po(out, catalog, include_lineno=False, sort_by_file=True)
    path.write_bytes(out.getvalue())
    shipped.cache_clear()


def main(argv: list[str]) -> None:
    pot = template()
    if argv[:1] == ["--add"] and len(argv) == 2:
        add(argv[1], pot)
    elif argv:
        raise SystemExit("usage: python -m tools.translations [--add LANG]")
    for lang in shipped()[1:]:
        changed = update(lang, pot)
        with open(catalog_path(lang), "rb") as fh:
            catalog = read_po(fh)
        todo = sum(1 for m in catalog if m.id and (m.fuzzy or not all(
            m.string if isinstance(m.string, tuple) else (m.string,))))
        where = catalog_path(lang).relative_to(LOCALE_DIR.parent.parent)
        print(f"{where}: {'updated' if changed else 'unchanged'}; entries to translate or review: {todo}")


if __name__ == "__main__":
    main(sys.argv[1:])
