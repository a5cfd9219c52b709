"""The operator's guide in each shipped language keeps the English guide's shape.

docs/operator.md is translated once per shipped language (docs/operator.<lang>.md). A translation
that lost a section, or changed a command an operator types, would send a French or Swahili
operator somewhere the English one is not sent: so each one must be linked from the English
guide, have as many headings at each level, the very same fenced code blocks, and links that lead
to files that exist (and, inside the page, to headings it has).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
ENGLISH = DOCS / "operator.md"
LANGUAGES = ("fr", "sw", "pt", "es")

FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"`[^`]*`")
KEY_ROW = re.compile(r"^\| ((?:`[^`]+` ?)+) \| `(\w+)` \|.*\| ([\w-]+) \|$")  # | `k` | `id` | ... | role |


def guide(lang: str) -> Path:
    return DOCS / f"operator.{lang}.md"


def parts(text: str) -> tuple[list[tuple[int, str]], list[str], list[str]]:
    """The page's headings (level, words), its fenced code blocks (whole, fences included) and the
    link targets of its prose, in order; a ``#`` inside a code block is no heading."""
    headings: list[tuple[int, str]] = []
    blocks: list[str] = []
    links: list[str] = []
    block: list[str] | None = None
    for line in text.splitlines():
        if block is not None:
            block.append(line)
            if FENCE.match(line.strip()) and line.strip() == block[0].strip()[:3]:
                blocks.append("\n".join(block))
                block = None
            continue
        if FENCE.match(line.strip()):
            block = [line]
            continue
        found = HEADING.match(line)
        if found:
            headings.append((len(found.group(1)), found.group(2)))
        links.extend(LINK.findall(INLINE_CODE.sub("", line)))
    assert block is None, "a code block is not closed"
    return headings, blocks, links


def slug(words: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", INLINE_CODE.sub(lambda m: m.group(0)[1:-1], words).lower()).replace(" ", "-")


def levels(headings: list[tuple[int, str]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for level, _words in headings:
        counts[level] = counts.get(level, 0) + 1
    return counts


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_translation_exists_and_the_english_guide_links_it(lang):
    assert guide(lang).is_file(), f"docs/operator.{lang}.md is missing"
    english_links = parts(read(ENGLISH))[2]
    assert guide(lang).name in english_links, f"docs/operator.md does not link {guide(lang).name}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_translation_has_the_english_headings_levels(lang):
    english = levels(parts(read(ENGLISH))[0])
    translated = levels(parts(read(guide(lang)))[0])
    assert translated == english, f"headings per level: {translated} in {lang}, {english} in English"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_translation_has_the_english_code_blocks(lang):
    english = parts(read(ENGLISH))[1]
    translated = parts(read(guide(lang)))[1]
    missing = [b for b in english if b not in translated]
    extra = [b for b in translated if b not in english]
    assert not missing and not extra, f"{lang}: code blocks missing {missing}, not in English {extra}"
    assert translated == english, f"{lang}: the code blocks are in another order"


@pytest.mark.parametrize("lang", ("en", *LANGUAGES))
def test_every_relative_link_leads_somewhere(lang):
    path = ENGLISH if lang == "en" else guide(lang)
    headings, _blocks, links = parts(read(path))
    anchors = {slug(words) for _level, words in headings}
    broken = []
    for target in links:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto: ... not this repository's
        file, _hash, anchor = target.partition("#")
        if file:
            if not (path.parent / file).exists():
                broken.append(target)
        elif anchor not in anchors:
            broken.append(target)
    assert not broken, f"{path.name}: links that lead nowhere: {broken}"


def key_rows(text: str) -> list[tuple[str, str, str]]:
    """The key table's (keys, action id, role) per row: what an operator presses and remaps."""
    return [found.groups() for found in map(KEY_ROW.match, text.splitlines()) if found]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_translation_has_the_english_key_table(lang):
    english = key_rows(read(ENGLISH))
    assert len(english) > 30, "the English key table was not found"
    assert key_rows(read(guide(lang))) == english, f"{lang}: the key table's keys, ids or roles differ from English"


def test_the_parser_sees_headings_blocks_and_links():
    text = "# A\n\n## B c'est\n\n```sh\n# not a heading\n```\n\nsee [x](a.md#y) and `[z](no.md)`\n"
    headings, blocks, links = parts(text)
    assert headings == [(1, "A"), (2, "B c'est")]
    assert blocks == ["```sh\n# not a heading\n```"]
    assert links == ["a.md#y"]
    assert key_rows("| `ctrl+p` | `palette` | Palette | Partout | - |\n| key | id | what | where | role |") == [
        ("`ctrl+p`", "palette", "-")]
    assert slug("Réattribuer les touches") == "réattribuer-les-touches"
    assert slug("Ce qu'il est advenu de chaque trame") == "ce-quil-est-advenu-de-chaque-trame"
