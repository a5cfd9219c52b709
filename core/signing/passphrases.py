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

from core.i18n import N_

from .keys import ActionError

PASSPHRASE_MIN = 8
SCORE_MIN = 3  # of zxcvbn's 0-4: 3 is "safely unguessable" (about 10^8 guesses or more)
JUDGED_CHARS = 100  # zxcvbn's time grows with length; the first 100 characters decide
PROGRAM_WORDS = ("ussd-console", "ussd", "console")
WORD_MIN = 3  # a home word shorter than this ("A", "K2") would make ordinary letters suspect
DRESS = "0123456789!.-_ "
ADVICE = ("a good passphrase is a short sentence of four or more words that only you would put together, "
          "such as 'kettle on the third shelf sings'; length beats symbols")


def _letters(text: str) -> str:
    """Only the letters, case-blind: spaces, punctuation and digits are what a word is dressed in."""
    return re.sub(r"[\W\d_]+", "", text.casefold())


def _home_words(name: str, sites: Iterable[str]) -> dict[str, str]:
    """Each word an attacker of this home tries first, case-blind, and what it is."""
    words: dict[str, str] = {}
    for word, what in [*((w, "the program's name") for w in PROGRAM_WORDS),
                       *((s, "a site's name") for s in sites), (name, "the operator's own name")]:
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


def _only_home_words(passphrase: str, words: dict[str, str]) -> str | None:
    """What the passphrase is only made of ("the operator's own name"), or None."""
    squeezed = "".join(passphrase.casefold().split())
    for word, what in words.items():
        if squeezed.strip(DRESS) in (word, word[::-1], word * 2):
            return what
    letters = {_letters(w): what for w, what in words.items() if _letters(w)}
    made = _made_of(_letters(passphrase), letters)
    if not made:
        return None
    kinds = sorted({letters[w] for w in made})
    return " and ".join(kinds)


def _estimate(passphrase: str, words: Iterable[str]) -> dict:
    from zxcvbn import zxcvbn  # here only: see the module's docstring

    return zxcvbn(passphrase[:JUDGED_CHARS], user_inputs=list(words))


def _estimator_says(result: dict) -> str:
    """zxcvbn's warning and suggestions as one sentence run (its own words)."""
    feedback = result.get("feedback") or {}
    said = [feedback.get("warning") or "", *(feedback.get("suggestions") or [])]
    text = " ".join(" ".join(s.split()) for s in said if s and s.strip())
    return text.rstrip(".") or "it is among the first guesses a cracking tool tries"  # "; " follows


def weakness(passphrase: str, name: str, sites: Iterable[str] = ()) -> str | None:
    """Why ``passphrase`` is too weak for operator ``name`` in a home with these ``sites``, or None."""
    if len(passphrase) < PASSPHRASE_MIN:
        return f"the passphrase must be at least {PASSPHRASE_MIN} characters"
    words = _home_words(name, sites)
    result = _estimate(passphrase, words)
    if result["score"] < SCORE_MIN:
        return (f"the passphrase is too easy to guess (strength {result['score']} of 4, "
                f"at least {SCORE_MIN} needed): {_estimator_says(result)}")
    made_of = _only_home_words(passphrase, words)
    if made_of is not None:
        return f"the passphrase is only {made_of}, repeated or dressed in digits and punctuation"
    return None


def check_new_passphrase(passphrase: object, name: str, sites: Iterable[str] = ()) -> str:
    """The passphrase for a new key, or a one-line refusal saying what makes a good one."""
    if not isinstance(passphrase, str) or not passphrase:
        raise ActionError(N_("a passphrase is required"))
    why = weakness(passphrase, name, sites)
    if why is not None:
        raise ActionError(f"{why}; {ADVICE}")
    return passphrase
