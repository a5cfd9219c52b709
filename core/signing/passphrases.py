"""Which new passphrases are refused: short, common or trivial ones an attacker tries first.

The key file's slow KDF makes each guess cost, but only a passphrase outside
the first lists an attacker tries makes the cost count. The list below is the
head of the published most-common-password lists (the ones every cracking
tool starts with), lower-cased; a passphrase is compared case-blind and with
its surrounding spaces removed. The operator's own name is refused however it
is dressed: repeated, reversed, or among spaces, punctuation and digits.
"""

from __future__ import annotations

import re

from .keys import ActionError

PASSPHRASE_MIN = 8
DISTINCT_MIN = 4  # "abababab" or "aaaa1111" are as weak as a short one
ADVICE = ("a good passphrase is a short sentence of four or more words that only you would put together, "
          "such as 'kettle on the third shelf sings'; length beats symbols")

COMMON = frozenset("""
password password1 password12 password123 password1234 passw0rd p@ssw0rd p@ssword pa55word passphrase
12345678 123456789 1234567890 12345678910 0123456789 87654321 987654321 11111111 00000000 88888888
123123123 12341234 11223344 1q2w3e4r 1q2w3e4r5t 1qaz2wsx qwertyui qwertyuiop qwerty123 qwerty1234
asdfghjk asdfghjkl zxcvbnm1 zxcvbnma abcd1234 abcdefgh abc12345 a1b2c3d4 aa123456 iloveyou iloveyou1
sunshine princess football baseball welcome1 welcome123 dragon123 monkey123 letmein1 letmein123
trustno1 superman batman123 starwars computer internet whatever mustang1 michael1 jennifer charlie1
shadow12 master12 freedom1 changeme changeme1 administrator admin123 admin1234 root1234 secret12
qazwsxedc 1qazxsw2 zaq12wsx q1w2e3r4 q1w2e3r4t5 passwort motdepasse contrasena senha123
""".split())


def _sequence(text: str) -> bool:
    """Whether the characters run up or down by one the whole way ("12345678", "hgfedcba")."""
    steps = {ord(b) - ord(a) for a, b in zip(text, text[1:])}
    return steps in ({1}, {-1})


def _letters(text: str) -> str:
    """Only the letters, case-blind: spaces, punctuation and digits are what a name is dressed in."""
    return re.sub(r"[\W\d_]+", "", text.casefold())


def _only_name(squeezed: str, own: str) -> bool:
    """Whether the passphrase is the name and nothing else: once, twice or more ("erin erin erin
    erin", "Erin-Erin!"), backwards, or with digits and punctuation around it ("erin2024")."""
    if squeezed.strip("0123456789!.-_ ") == own or squeezed == own[::-1] or squeezed == own * 2:
        return True
    name, left = _letters(own), _letters(squeezed)
    return bool(name) and re.fullmatch(f"(?:{re.escape(name)}|{re.escape(name[::-1])})+", left) is not None


def weakness(passphrase: str, name: str) -> str | None:
    """Why ``passphrase`` is too weak for operator ``name``, or None."""
    if len(passphrase) < PASSPHRASE_MIN:
        return f"the passphrase must be at least {PASSPHRASE_MIN} characters"
    plain = passphrase.strip().casefold()
    if not plain:
        return "the passphrase is only spaces"
    if len(set(plain)) < DISTINCT_MIN:
        return f"the passphrase uses fewer than {DISTINCT_MIN} different characters"
    squeezed = "".join(plain.split())
    if plain in COMMON or squeezed in COMMON:
        return "the passphrase is one of the most common ones, which are tried first"
    if _sequence(squeezed):
        return "the passphrase is a run of consecutive characters"
    own = name.casefold()
    if own and _only_name(squeezed, own):
        return "the passphrase is the operator's own name"
    return None


def check_new_passphrase(passphrase: object, name: str) -> str:
    """The passphrase for a new key, or a one-line refusal saying what makes a good one."""
    if not isinstance(passphrase, str) or not passphrase:
        raise ActionError("a passphrase is required")
    why = weakness(passphrase, name)
    if why is not None:
        raise ActionError(f"{why}; {ADVICE}")
    return passphrase
