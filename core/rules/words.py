"""The words a person reads for the store's status codes, shared by the command line, the console
and the log, so all three say a thing the same way.

The codes (``kept_first``, ``DUPLICATE``) stay exact in ``--json``, the store and exports. Each
entry has its long words and, where the console's narrow columns need it, shorter ones. Pure data
and functions: ``core`` (the inbox's log) and ``console`` both import it.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.i18n import N_

from .reasons import Words

# What became of a held conflict (the quarantine row's status).
RESOLUTIONS: dict[str, Words] = {
    "open": Words("open, waiting for an operator", "! open"),
    "kept_first": Words("kept the first version", "kept first"),
    "accepted_correction": Words("accepted the correction", "correction accepted"),
    "settled": Words("settled by a decision on the same case", "settled"),
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


def resolution_words(code: str | None, short: bool = False) -> str:
    """A conflict's status in words; an unknown code (a newer store) is shown as it is."""
    words = RESOLUTIONS.get(code or "")
    if words is None:
        return code or "-"
    return (words.short or words.long) if short else words.long


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
