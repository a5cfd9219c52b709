"""A case's lifecycle (docs/rules.md#carrying-a-case-to-done): its statuses and the moves allowed.

Pure data and one check, so the command line, the console and the signed
action refuse the same moves with the same words. A status never touches
dedup (R14): it is a fact about aid, not about frames.

The moves, and why:
- ``open`` (new, waiting) can go anywhere: a team is sent (``dispatched``), aid
  was handed over on the spot (``served``), or nothing is needed (``closed``);
- ``dispatched`` can be ``served``, ``closed`` (the team found nothing to do)
  or back to ``open`` (the team was recalled before arriving);
- ``served`` and ``closed`` are done; the only way back is ``open`` (re-opened:
  the aid did not arrive, or the case was closed by mistake). Done cases never
  jump straight to ``dispatched`` or to each other: a re-opened case goes
  through the queue again, so the ranking shows it before a team is sent.
Every move is a signed action, so every move carries a reason (``closed`` too:
"closed needs a reason" holds because nothing is signed without one).
"""

from __future__ import annotations

from core.i18n import MarkedError, N_, _

from .text import Twofold

OPEN = "open"
DISPATCHED = "dispatched"
SERVED = "served"
CLOSED = "closed"
STATUSES = (OPEN, DISPATCHED, SERVED, CLOSED)

# A status as a person reads it, translated where shown (``_(SHOWN[code])``); the codes stay codes.
SHOWN = {OPEN: N_("open"), DISPATCHED: N_("dispatched"), SERVED: N_("served"), CLOSED: N_("closed")}

# Shown in the ranking: cases aid may still go to. Served and closed ones leave it.
RANKED = (OPEN, DISPATCHED)

MOVES: dict[str, frozenset[str]] = {
    OPEN: frozenset({DISPATCHED, SERVED, CLOSED}),
    DISPATCHED: frozenset({OPEN, SERVED, CLOSED}),
    SERVED: frozenset({OPEN}),
    CLOSED: frozenset({OPEN}),
}

MEANINGS = {
    OPEN: "waiting for aid (new, or re-opened)",
    DISPATCHED: "a team is on its way",
    SERVED: "aid was delivered",
    CLOSED: "no action needed (the reason says why)",
}


class LifecycleError(MarkedError, ValueError):
    """A status or a move the lifecycle does not allow; the message is one line for the operator."""


def _shown(status: str) -> Twofold:
    """A status as an error's value: the code in ``str``, the operator's word where said."""
    return Twofold(status, lambda: _(SHOWN[status]))


def check_status(value: object) -> str:
    status = str(value).strip().lower()
    if status not in STATUSES:
        raise LifecycleError(N_("a case status is one of %(statuses)s, not %(given)s"), statuses=", ".join(STATUSES),
                             given=repr(str(value)[:20]))
    return status


def check_move(current: str, wanted: object) -> str:
    """The wanted status if the lifecycle allows ``current -> wanted``; else a one-line refusal."""
    wanted = check_status(wanted)
    if wanted == current:
        raise LifecycleError(N_("the case is already %(status)s; nothing to sign"), status=_shown(current))
    allowed = MOVES.get(current, frozenset())
    if wanted not in allowed:
        ways = ", ".join(s for s in STATUSES if s in allowed)
        if not ways:
            raise LifecycleError(N_("a %(current)s case cannot be marked %(wanted)s (from %(current)s: nothing)"),
                                 current=_shown(current), wanted=_shown(wanted))
        raise LifecycleError(N_("a %(current)s case cannot be marked %(wanted)s (from %(current)s: %(ways)s)"),
                             current=_shown(current), wanted=_shown(wanted), ways=ways)
    return wanted


def is_ranked(status: str) -> bool:
    return status in RANKED
