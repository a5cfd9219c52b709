"""The words a person reads for the store's status codes, shared by the command line, the console
and the log, so all three say a thing the same way.

The codes (``kept_first``, ``DUPLICATE``) stay exact in ``--json``, the store and exports. Each
entry has its long words and, where the console's narrow columns need it, shorter ones. Pure data
and functions: ``core`` (the inbox's log) and ``console`` both import it.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.i18n import N_, _

from .reasons import Words
from .text import Said, escape_text

# What became of a held conflict (the quarantine row's status).
RESOLUTIONS: dict[str, Words] = {
    "open": Words(N_("open, waiting for an operator"), N_("! open")),
    "kept_first": Words(N_("kept the first version"), N_("kept first")),
    "accepted_correction": Words(N_("accepted the correction"), N_("correction accepted")),
    "settled": Words(N_("settled by a decision on the same case"), N_("settled")),
}

# A count of frames by outcome, one and many: "1 duplicate", "2 duplicates".
OUTCOME_COUNTS: dict[str, tuple[str, str]] = {
    "APPLIED": ("applied", "applied"),
    "DUPLICATE": ("duplicate", "duplicates"),
    "CONFLICT_QUARANTINED": ("conflict held", "conflicts held"),
    "REJECT_BAD_FORMAT": ("rejected (not a frame)", "rejected (not frames)"),
    "REJECT_BAD_CRC": ("rejected (bad checksum)", "rejected (bad checksum)"),
}
OUTCOME_ORDER = tuple(OUTCOME_COUNTS)

NO_RECEIVER = N_("no watch or console is running")  # translated where shown
NONE = "none"


def resolution_in_english(code: str | None, short: bool = False) -> str:
    """A conflict's status in English words (for a sentence still English); an unknown code (a newer
    store) is shown as it is."""
    words = RESOLUTIONS.get(code or "")
    if words is None:
        return code or "-"
    return (words.short or words.long) if short else words.long


def resolution_words(code: str | None, short: bool = False) -> str:
    """A conflict's status in the operator's language (``Said``); an unknown code escaped."""
    if code in RESOLUTIONS:
        return Said(_(resolution_in_english(code, short)))
    return escape_text(resolution_in_english(code, short), 64)


def outcome_counts(counts: Mapping[str, int]) -> str:
    """Frames by outcome in words, in the outcomes' order: "1 applied, 2 duplicates"; "none"."""
    known = [code for code in OUTCOME_ORDER if counts.get(code)]
    known += sorted(code for code in counts if code not in OUTCOME_COUNTS and counts[code])
    parts = []
    for code in known:
        n = counts[code]
        one, many = OUTCOME_COUNTS.get(code, (code, code))
        parts.append(f"{n:,} {one if n == 1 else many}")
    return ", ".join(parts) or NONE
