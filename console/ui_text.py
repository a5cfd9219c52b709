"""Text for the console's widgets: escaped, compact, and never colour alone.

Everything a widget shows that came from outside (ids, frame texts, file
names, reject lines) goes through ``console.render.safe``, the one escape
for outside text: ``escape_text`` bounds it and turns control bytes into
visible escapes, and a Rich ``Text`` is never parsed as markup, so neither
markup nor a terminal sequence from an input can reach the screen.
"""

from __future__ import annotations

import datetime as dt
import os

from rich.text import Text

from console.render import safe
from core.i18n import N_, SOURCE, _, language, ngettext
from core.i18n import number as i18n_number
from core.rules.reasons import reason_words
from core.rules.frame import NEED_NAMES
from core.rules.words import RESOLUTIONS, resolution_words


def basename(path: object, limit: int = 40) -> Text:
    """A file name from the store, escaped; the folder is noise at 80 columns."""
    if not path:
        return Text("-", style="dim")
    return safe(os.path.basename(str(path)), limit)


# The month's name, never its number, whatever the machine's locale: "2 Dec" reads one way only,
# where "12-02" is the 2nd of December to some readers and the 12th of February to others. In the
# operator's language when it is not English ("2 déc.", Babel's abbreviated month).
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def day(when: dt.datetime) -> str:
    """The day and the month's name: "2 Dec"."""
    lang = language()
    if lang == SOURCE:
        return f"{when.day} {MONTHS[when.month - 1]}"
    from babel.dates import format_date

    return format_date(when, "d MMM", locale=lang)


def stamp(ts: float | None) -> str:
    """Day, month's name and minute ("2 Dec 10:16"): unambiguous, short enough for 80 columns."""
    if ts is None:
        return "-"
    when = dt.datetime.fromtimestamp(ts)
    return f"{day(when)} {when:%H:%M}"


def day_only(text: Text, width: int) -> Text:
    """A ``stamp`` cell in ``width`` cells: "23 Mar 09:30" gives up its time ("23 Mar") when it is
    wider; a cell that fits stays whole (a column's fitting, ``KeyedTable``)."""
    if text.cell_len <= width or " " not in text.plain:
        return text
    return Text(text.plain.rsplit(" ", 1)[0], style=text.style)


def short_stamp(ts: float | None, now: float) -> str:
    """The time for today, the day before ("2 Dec"), as ``ls`` does: at most six characters."""
    if ts is None:
        return "-"
    when = dt.datetime.fromtimestamp(ts)
    return f"{when:%H:%M}" if when.date() == dt.datetime.fromtimestamp(now).date() else day(when)


def count(n: int | None) -> str:
    return "-" if n is None else i18n_number(n)


def number(n: int | None) -> Text:
    """A right-aligned count for a table cell."""
    return Text(count(n), justify="right")


def need(code: str) -> Text:
    """The need code with its name in the operator's language when known ("WAT water"); unknown
    codes stay valid."""
    name = NEED_NAMES.get(code)
    text = safe(code, 8)
    if name:
        text.append(f" {_(name)}", style="dim")
    return text


def need_code(code: str) -> Text:
    """The need code alone, for a narrow table (the name is in the case's history)."""
    return safe(code, 8)


STATUS_SHOWN = {"open": N_("open"), "dispatched": N_("dispatched"), "served": N_("served"), "closed": N_("closed")}


def status(word: str, disputed: bool = False) -> Text:
    """A case's status as its word; a disputed case also says DISPUTED, after a ``!``. Never colour alone."""
    out = Text(_(STATUS_SHOWN.get(word, word)), style="bold" if word == "dispatched" else "")
    if disputed:
        out.append(_(" ! DISPUTED"), style="bold reverse")
    return out


# Every outcome carries its own word and a leading mark; style only repeats it.
OUTCOMES = {
    "APPLIED": (N_("+ applied"), "bold"),
    "DUPLICATE": (N_("= duplicate"), "dim"),
    "CONFLICT_QUARANTINED": (N_("! CONFLICT"), "bold reverse"),
    "REJECT_BAD_FORMAT": (N_("x bad format"), "underline"),
    "REJECT_BAD_CRC": (N_("x bad checksum"), "underline"),
}
MEANINGS = {
    "APPLIED": N_("first valid arrival of a case: the ledger changed"),
    "DUPLICATE": N_("already applied (a re-send or a re-rank): counted, nothing else"),
    "CONFLICT_QUARANTINED": N_("same identity, different payload: held in Quarantine"),
    "REJECT_BAD_FORMAT": N_("not a frame: listed under Rejects with file and line"),
    "REJECT_BAD_CRC": N_("the checksum does not match the frame: listed under Rejects"),
}


def outcome(code: str) -> Text:
    label, style = OUTCOMES.get(code, (code, ""))
    return Text(_(label), style=style)


# The store's reason codes are exact (--json, docs/operator.md); the screen says them in words,
# the long ones shorter than the command line does (core.rules.reasons holds both).
def reason(code: str | None) -> Text:
    return safe(reason_words(code, short=True), 40)


EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(value: float, largest: float, width: int) -> str:
    """A horizontal bar in eighth-cell steps: its length carries the meaning, not its colour."""
    if width <= 0 or largest <= 0 or value <= 0:
        return ""
    cells = value / largest * width
    full = int(cells)
    part = int((cells - full) * 8)
    text = "█" * full + (EIGHTHS[part] if part and full < width else "")
    return text or "▏"


# -- words shared by screens, for what the store calls by a short name ------------------------------------------
PRI = N_("priority")  # the field's 0-99 urgency: higher goes first in the ranking
PRI_WORDS = "priority 0-99 from the field (higher goes first)"
RESOLUTION_WORDS = {code: resolution_words(code, short=True) for code in RESOLUTIONS}  # core.rules.words


def files_waiting(n: int) -> str:
    """The inbox's backlog, said whole: "1 file waiting in the inbox"."""
    return ngettext("%(n)s file waiting in the inbox", "%(n)s files waiting in the inbox", n, n=count(n))


def inbox_takers(records: list[dict], own_pid: int | None = None) -> list[dict]:
    """The live inbox services (heartbeat records) other than this process, oldest first."""
    return [r for r in records if r.get("pid") != own_pid]


def taker_words(record: dict) -> str:
    """Who takes the inbox, in words: "`ussd-console watch` (pid 123)"."""
    role = str(record.get("role") or "a receiver")
    name = "`ussd-console watch`" if role == "watch" else f"another {role}" if role == "console" else role
    return f"{name} (pid {record.get('pid', '?')})"


def quit_inbox_words(others: list[dict]) -> str:
    """What quitting does to the inbox, true for this home now: who takes it after this console."""
    if others:
        return _("This console stops taking in the inbox; %(who)s is running on this home "
                 "and takes new files from now on. Nothing is lost.", who=taker_words(others[0]))
    return _("This console stops taking in the inbox, and nothing else takes it on this home now: new files "
             "wait there until the console or %(command)s runs again. Nothing is lost.",
             command="`ussd-console watch`")
