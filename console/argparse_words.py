"""argparse's own words an operator reads (the usage line, its errors, its help headings), marked
here so that ``make translations`` carries them into the catalogs.

argparse looks each of them up at the moment it shows it, through its module's ``_`` and
``ngettext``; ``console/cli.py`` points those at ``core.i18n``, so the usage error of a
command comes out in the operator's language with the rest of its words.
"""

from __future__ import annotations


def N_(message: str) -> str:
    """A mark only: the word is looked up later, by argparse."""
    return message


def ngettext(singular: str, plural: str, n: int) -> str:
    """The same mark for a word with plural forms."""
    return singular


WORDS = (
    N_("usage: "),
    N_("%(prog)s: error: %(message)s\n"),
    N_("argument %(argument_name)s: %(message)s"),
    N_("unrecognized arguments: %s"),
    N_("the following arguments are required: %s"),
    N_("one of the arguments %s is required"),
    N_("not allowed with argument %s"),
    N_("ignored explicit argument %r"),
    N_("expected one argument"),
    N_("expected at most one argument"),
    N_("expected at least one argument"),
    ngettext("expected %s argument", "expected %s arguments", 2),
    N_("ambiguous option: %(option)s could match %(matches)s"),
    N_("invalid %(type)s value: %(value)r"),
    N_("positional arguments"),
    N_("options"),
    N_("show this help message and exit"),
)
