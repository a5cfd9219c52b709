"""The words a person reads for the figures' keys (a need, a status, a reason, a wait), in the
operator's language, for the HTML and PDF pages and their charts. ``Figures`` keeps its labels
in English: ``report --json`` and the CSV, XLSX and HXL exports write them as data."""

from __future__ import annotations

from core.i18n import N_, _, ngettext, number
from core.rules.frame import NEED_NAMES
from core.rules.lifecycle import SHOWN
from core.rules.reasons import reason_words

from .model import Count, Figures


def need(code: str, label: str = "") -> str:
    return _(NEED_NAMES[code]) if code in NEED_NAMES else (label or code)


def status(code: str) -> str:
    return _(SHOWN[code]) if code in SHOWN else code


def reason(code: str) -> str:
    return reason_words(code)


def waited(c: Count) -> str:
    """A wait bucket's words (``figures.WAIT_BUCKETS``, marked there)."""
    return _(c.label)


def site(c: Count, f: Figures, shown: int) -> str:
    """A site's name, or the last row's words for the sites past the first ``shown`` together."""
    if c.key:
        return c.label
    rest = max(0, f.sites_total - shown)
    return ngettext("%(n)s other site", "%(n)s other sites", rest, n=number(rest))


# A receiver part's state (core/ops/health.py), as the pages say it.
PART_STATES = {"running": N_("running"), "off": N_("off"), "none": N_("none"), "dead": N_("dead"),
               "restarting": N_("restarting")}


def part(state: object) -> str:
    return _(PART_STATES[state]) if state in PART_STATES else str(state)


def notes(f: Figures) -> list[str]:
    """``Figures.notes`` in the operator's language (the figures keep them in English)."""
    if f.site:
        return [_("Cases are those first seen in the period, with the status they have now. Conflicts, rejects "
                  "and health are the whole home's.")]
    return [_("Cases are those first seen in the period, with the status they have now.")]
