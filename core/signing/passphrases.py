"""Which new passphrases are refused: ones an attacker's first guesses would find.

The key file's slow KDF makes each guess cost, but only a passphrase outside
the first guesses makes the cost count. The judge is zxcvbn, a maintained
estimator that guesses as cracking tools do: common passwords, dictionary
words, names, keyboard walks, repeats, sequences, dates and l33t spellings. It
is also told the words an attacker of this home would try first: the
operator's name, the site names in the store and the program's name. A score
below ``SCORE_MIN`` of 4 (under about 10^8 guesses) is refused with the
estimator's own warning and suggestion.

Two rules stay around it. The length floor, first, gives a short passphrase
a plain reason. And a passphrase made of nothing but those home words (the
name or a site repeated, reversed, or dressed in spaces, digits and
punctuation: ``Kakuma1 Kakuma1!``, ``ALICE 2024 alice``) is refused even when
zxcvbn passes it, as it does when spaces split the repeats and each is priced
as a fresh word.

zxcvbn is imported only when a passphrase is judged: its word lists take a
twentieth of a second to load, which no other command should pay.
"""

from __future__ import annotations

import re
from typing import Iterable

from core.i18n import N_, _
from core.rules.text import Twofold, worded

from .keys import ActionError

PASSPHRASE_MIN = 8
SCORE_MIN = 3  # of zxcvbn's 0-4: 3 is "safely unguessable" (about 10^8 guesses or more)
JUDGED_CHARS = 100  # zxcvbn's time grows with length; the first 100 characters decide
PROGRAM_WORDS = ("ussd-console", "ussd", "console")
WORD_MIN = 3  # a home word shorter than this ("A", "K2") would make ordinary letters suspect
DRESS = "0123456789!.-_ "
ADVICE = N_("a good passphrase is a short sentence of four or more words that only you would put together, "
            "such as 'kettle on the third shelf sings'; length beats symbols")
# What the home words are, as a refusal names them.
PROGRAM_NAME, SITE_NAME, OWN_NAME = N_("the program's name"), N_("a site's name"), N_("the operator's own name")
# zxcvbn's own feedback sentences: it gives them in English (through the ``messages`` gettext domain,
# which nothing here fills), so they are listed here for the catalogs and a refusal says them in the
# operator's language. tests/test_passphrases.py holds this list to zxcvbn's source.
ESTIMATOR_WORDS = (
    N_("Add another word or two. Uncommon words are better."),
    N_("Capitalization doesn't help very much."),
    N_("Reversed words aren't much harder to guess."),
    N_("Predictable substitutions like '@' instead of 'a' don't help very much."),
    N_("Use a few words, avoid common phrases."),
    N_("No need for symbols, digits, or uppercase letters."),
    N_("Straight rows of keys are easy to guess."),
    N_("Short keyboard patterns are easy to guess."),
    N_("This is a top-10 common password."),
    N_("This is similar to a commonly used password."),
    N_("A word by itself is easy to guess."),
    N_("All-uppercase is almost as easy to guess as all-lowercase."),
    N_("Use a longer keyboard pattern with more turns."),
    N_('Repeats like "aaa" are easy to guess.'),
    N_('Repeats like "abcabcabc" are only slightly harder to guess than "abc".'),
    N_("This is a top-100 common password."),
    N_("This is a very common password."),
    N_("Names and surnames by themselves are easy to guess."),
    N_("Common names and surnames are easy to guess."),
    N_("Avoid repeated words and characters."),
    N_('Sequences like "abc" or "6543" are easy to guess.'),
    N_("Avoid sequences."),
    N_("Recent years are easy to guess."),
    N_("Dates are often easy to guess."),
    N_("Avoid recent years."),
    N_("Avoid years that are associated with you."),
    N_("Avoid dates and years that are associated with you."),
)
REFUSAL = N_("%(why)s; %(advice)s")  # why a new passphrase is refused, then what makes a good one
FIRST_GUESS = N_("it is among the first guesses a cracking tool tries")


def _letters(text: str) -> str:
    """Only the letters, case-blind: spaces, punctuation and digits are what a word is dressed in."""
    return re.sub(r"[\W\d_]+", "", text.casefold())


def _home_words(name: str, sites: Iterable[str]) -> dict[str, str]:
    """Each word an attacker of this home tries first, case-blind, and what it is."""
    words: dict[str, str] = {}
    for word, what in [*((w, PROGRAM_NAME) for w in PROGRAM_WORDS),
                       *((s, SITE_NAME) for s in sites), (name, OWN_NAME)]:
        if isinstance(word, str) and word.strip():
            words[word.casefold()] = what
    return words


def _made_of(text: str, words: Iterable[str]) -> list[str] | None:
    """The home words (or their reverses) that ``text`` is exactly made of, or None. A split is
    looked for piece length by piece length, so a long passphrase or many sites stay cheap."""
    by_length: dict[int, dict[str, str]] = {}
    for word in words:
        if len(word) >= WORD_MIN:
            for piece in (word, word[::-1]):
                by_length.setdefault(len(piece), {})[piece] = word
    found: list[list[str] | None] = [[]] + [None] * len(text)  # found[i]: a split of text[:i]
    for end in range(1, len(text) + 1):
        for length, pieces in by_length.items():
            start = end - length
            if start >= 0 and found[start] is not None and text[start:end] in pieces:
                found[end] = [*found[start], pieces[text[start:end]]]
                break
    return found[len(text)]


def _only_home_words(passphrase: str, words: dict[str, str]) -> Twofold | None:
    """What the passphrase is only made of ("the operator's own name"), or None."""
    squeezed = "".join(passphrase.casefold().split())
    for word, what in words.items():
        if squeezed.strip(DRESS) in (word, word[::-1], word * 2):
            return worded(what)
    letters = {_letters(w): what for w, what in words.items() if _letters(w)}
    made = _made_of(_letters(passphrase), letters)
    if not made:
        return None
    kinds = sorted({letters[w] for w in made})

    def said() -> str:
        out = _(kinds[0])
        for kind in kinds[1:]:
            out = _("%(first)s and %(then)s", first=out, then=_(kind))
        return out

    return Twofold(" and ".join(kinds), said)


def _estimate(passphrase: str, words: Iterable[str]) -> dict:
    from zxcvbn import zxcvbn  # here only: see the module's docstring

    return zxcvbn(passphrase[:JUDGED_CHARS], user_inputs=list(words))


def _estimator_says(result: dict) -> Twofold:
    """zxcvbn's warning and suggestions as one sentence run (its own words, ``ESTIMATOR_WORDS`` in
    the operator's language)."""
    feedback = result.get("feedback") or {}
    sentences = [" ".join(s.split()) for s in [feedback.get("warning") or "", *(feedback.get("suggestions") or [])]
                 if s and s.strip()]

    def run(say) -> str:
        return " ".join(map(say, sentences)).rstrip(".") or say(FIRST_GUESS)  # "; " follows

    return Twofold(run(str), lambda: run(_))


def weakness(passphrase: str, name: str, sites: Iterable[str] = ()) -> Twofold | None:
    """Why ``passphrase`` is too weak for operator ``name`` in a home with these ``sites``, or None."""
    if len(passphrase) < PASSPHRASE_MIN:
        return worded(N_("the passphrase must be at least %(n)s characters"), n=PASSPHRASE_MIN)
    words = _home_words(name, sites)
    result = _estimate(passphrase, words)
    if result["score"] < SCORE_MIN:
        return worded(N_("the passphrase is too easy to guess (strength %(score)s of 4, at least %(needed)s needed): "
                         "%(says)s"), score=result["score"], needed=SCORE_MIN, says=_estimator_says(result))
    made_of = _only_home_words(passphrase, words)
    if made_of is not None:
        return worded(N_("the passphrase is only %(made_of)s, repeated or dressed in digits and punctuation"),
                      made_of=made_of)
    return None


def check_new_passphrase(passphrase: object, name: str, sites: Iterable[str] = ()) -> str:
    """The passphrase for a new key, or a one-line refusal saying what makes a good one."""
    if not isinstance(passphrase, str) or not passphrase:
        raise ActionError(N_("a passphrase is required"))
    why = weakness(passphrase, name, sites)
    if why is not None:
        raise ActionError(REFUSAL, why=why, advice=worded(ADVICE))
    return passphrase
