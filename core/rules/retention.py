"""Retention rules (R7) as plain values and checks, shared by the store and the CLI."""

from __future__ import annotations

from core.i18n import N_, MarkedError, ngettext, number

from .text import Said, Twofold

DAY = 86_400
DEFAULT_SECONDS = 30 * DAY
FLOOR_SECONDS = 72 * 3600  # below this, refused whatever the signature
EXCEPTION_BELOW = 30 * DAY  # below this, only with an operator-signed exception
EVICT_EVERY_SECONDS = 3600  # the headless watcher and the console run eviction hourly


class RetentionError(MarkedError, ValueError):
    """A retention change that the rules refuse; the message is for the operator."""


def check_retention(seconds: int, signed: bool) -> bool:
    """Return whether the setting is an exception; raise when it is refused."""
    if seconds < FLOOR_SECONDS:
        raise RetentionError(N_("retention of %(period)s refused: the floor is 72 hours, whatever the signature"),
                             period=period(seconds))
    if seconds < EXCEPTION_BELOW:
        if not signed:
            raise RetentionError(N_("retention of %(period)s is below 30 days and needs an operator-signed exception"),
                                 period=period(seconds))
        return True
    return False


class EvictionSchedule:
    """When the next scheduled eviction is due: ``first_after`` seconds from ``now``, then every
    ``every`` seconds after the last one that ran. The headless watcher and the console share it."""

    def __init__(self, every: float, now: float, first_after: float = 0.0):
        self.every = every
        self.next_at = now + first_after

    def due(self, now: float) -> bool:
        """True (and the next one scheduled) when an eviction should run now."""
        if now < self.next_at:
            return False
        self.next_at = now + self.every
        return True

    def wait(self, now: float) -> float:
        """Seconds until the next one is due."""
        return max(0.0, self.next_at - now)


def describe(seconds: float) -> str:
    """A retention in the operator's words ("30 days", "30 jours"), for a screen or a preview."""
    if seconds % DAY == 0:
        days = int(seconds // DAY)
        return Said(ngettext("%(n)s day", "%(n)s days", days, n=number(days)))
    hours = seconds / 3600
    return Said(ngettext("%(n)s hour", "%(n)s hours", 2 if hours != 1 else 1, n=number(float(f"{hours:g}"))))


def period(seconds: float) -> Twofold:
    """A retention as an error's value: English in its ``str``, the operator's words where said."""
    return Twofold(in_english(seconds), lambda: describe(seconds))


def in_english(seconds: float) -> str:
    """The same retention in English, for words kept as data (``--json``, a held request's ``what``)."""
    if seconds % DAY == 0:
        days = int(seconds // DAY)
        return f"{days} day" + ("" if days == 1 else "s")
    return f"{seconds / 3600:g} hours"
