"""Activity: the live feed of outcomes, arrivals per minute, per-path counts, and rejects."""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from rich.table import Table
from rich.text import Text
from textual import on
from textual.widgets import DataTable, Sparkline, Static

from core.i18n import N_, SOURCE, _, language, ngettext
from console.dialogs.reject_dialog import RejectDialog
from console.render import assembled, safe
from console.ui_text import basename, count, outcome, reason, stamp
from console.widgets.keyed_table import KeyedTable, shorten_middle
from core.gateways.accounts import counts as gateway_counts
from core.inbox import file_counts, inbox_files
from core.rules.explain import explain_reject
from core.store.records import Activity, InboxFile, Reject

from console import actions

from .panel import PAGE, Panel

# The reason comes before the file: at 80 columns, even maximized, it is the column that must not be cut.
FEED_COLUMNS = [
    ("ts", N_("time")),
    ("outcome", N_("outcome")),
    ("reason", N_("reason")),
    ("frame_id", N_("frame id")),
    ("where", N_("file:line")),
    ("source", N_("path")),
]
REJECT_COLUMNS = [
    ("ts", N_("when")),
    ("where", N_("file:line")),
    ("frame_id", N_("frame id")),
    ("why", N_("what was wrong (enter: all)")),
    ("text", N_("line")),
]
FILE_COLUMNS = [
    ("ts", N_("when")),
    ("file", N_("file")),
    ("path", N_("path")),
    ("reason", N_("why the whole file was rejected")),
    ("kept", N_("kept as")),
]
# At 80 columns a table gives up, in this order, what is said elsewhere: the feed its path (the
# counts per path are above it), the rejects their line (Enter shows it whole). Then the feed's
# times lose their seconds and a file name its extension, and only then is a long name shortened
# in its middle; its line number always stays. A frame id and a number are never shortened.
FEED_DROP = ("source",)
REJECT_DROP = ("text",)


def shorten_where(text: Text, width: int) -> Text:
    """``name.txt:12`` in ``width`` cells: ``name:12`` first, then ``na…me:12``."""
    name, colon, line = text.plain.rpartition(":") if ":" in text.plain else (text.plain, "", "")
    stem, dot, _ext = name.rpartition(".")
    if dot and stem:
        text = Text(stem + colon + line, style=text.style)
    return shorten_middle(text, width, keep_end=":" if colon else "")


def minute(text: Text, width: int) -> Text:
    """``09:08:00`` as ``09:08``: every time of the column, once its seconds do not fit."""
    return Text(text.plain[:5], style=text.style)


FEED_SHORTEN = {"ts": minute, "where": shorten_where}
REJECT_SHORTEN = {"where": shorten_where}
MINUTES = 60
# The per-path counts' headers, short: seven columns fit 80 in every language.
PATH_HEADERS = (
    N_("path"), N_("frames"), N_("applied"),
    # TRANSLATORS: a short column header: frames that were re-sent copies (duplicates)
    N_("dup"),
    N_("conflict"),
    # TRANSLATORS: a short column header: frames rejected (bad format or checksum)
    N_("rejected"),
    N_("files"),
)
# The outcomes counted in the columns between "frames" and "rejected", in their order.
PATH_OUTCOMES = ("APPLIED", "DUPLICATE", "CONFLICT_QUARANTINED")


class ActivityData(NamedTuple):
    """One load of the Activity screen."""

    feed: list[Activity]
    arrivals: list[int]
    per_source: dict[str, dict[str, int]]  # path -> outcome code -> frames
    rejects: list[Reject]
    files: dict[str, int]  # path -> files
    rejected_files: list[InboxFile]
    gateways: dict[str, dict]


REJECTED_CODES = ("REJECT_BAD_FORMAT", "REJECT_BAD_CRC")


def clock_time(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%H:%M:%S")


def where(file: str | None, line: int | None) -> Text:
    """``name:line``, the name whole up to a bound: a table too narrow for it shortens it visibly."""
    if not file:
        return Text("-", style="dim")
    out = basename(file, 120)
    if line is not None:
        out.append(f":{line}")
    return out


def per_path_table(per_source: dict, files: dict, claims_lost: int | None, gateways: dict | None = None) -> Table:
    grid = Table.grid(padding=(0, 1))
    for _column in PATH_HEADERS:
        grid.add_column(justify="right")
    grid.columns[0].justify = "left"
    grid.add_row(*(Text(_(h), style="bold") for h in PATH_HEADERS))
    for source in sorted(set(per_source) | set(files)):
        counts = per_source.get(source, {})
        frames = sum(counts.values())
        rejected = sum(counts.get(code, 0) for code in REJECTED_CODES)
        grid.add_row(
            safe(source, 16), Text(count(frames)),
            *(Text(count(counts.get(code, 0))) for code in PATH_OUTCOMES),
            Text(count(rejected)), Text(count(files.get(source)) if source in files else "-"),
        )
    if not per_source and not files:
        grid.add_row(Text(_("nothing has arrived yet"), style="dim"), *([""] * 6))
    for name, g in (gateways or {}).items():  # each gateway is its path gw_<name>; its posts told apart
        line = assembled(_("gateway %(name)s: %(posts)s posts, %(retries)s webhook retries, %(refused)s refused, "
                           "%(spooled)s spooled"), name=safe(name, 40), posts=count(g["posts"]),
                         retries=count(g["webhook_retries"]), refused=count(g["refused"]), spooled=count(g["spooled"]))
        line.stylize("dim")
        grid.add_row(line, *([""] * 6))
    if claims_lost:
        grid.add_row(Text(ngettext("files both paths reached: %(n)s (each was taken once)",
                                   "files both paths reached: %(n)s (each was taken once)", claims_lost,
                                   n=count(claims_lost)), style="dim"), *([""] * 6))
    return grid


class NewestFirstTable(KeyedTable):
    """A newest-first table that follows the newest row while the operator is at the top.

    ``KeyedTable`` keeps the operator's row in place when rows come; at the top of a live feed that
    pushed each new row above the visible top. Here, a cursor on the first row with nothing scrolled
    means "follow": new rows come in view and the cursor stays on the newest. Moved or scrolled
    away, the operator's place is kept as before.
    """

    @property
    def following(self) -> bool:
        return self.cursor_row <= 0 and round(self.scroll_y) == 0

    def sync(self, rows) -> None:
        following = self.following
        super().sync(rows)
        if following and self.row_count:
            self.move_cursor(row=0, scroll=False)
            self.call_after_refresh(self.scroll_to, y=0, animate=False, immediate=True)


class ActivityPanel(Panel):
    TAB_ID = "activity"
    TITLE = N_("Activity")
    EXPORT_VIEW = "rejects"
    BINDINGS = actions.bindings(TAB_ID)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.rejects: dict[str, Reject] = {}

    def compose(self):
        yield Static(id="arrivals-label")
        yield Sparkline([], id="arrivals")
        yield Static(id="per-path")
        yield Static(Text(_("Live feed (newest first)"), style="bold"), classes="section")
        # Longer headers than the English ones: at 80 columns the file:line goes whole rather than show cut
        # at the edge (the Rejects table below says it for every line that was wrong).
        feed_drop = FEED_DROP if language() == SOURCE else (*FEED_DROP, "where")
        yield NewestFirstTable(FEED_COLUMNS, drop=feed_drop, shorten=FEED_SHORTEN, id="feed-table")
        yield Static(Text(_("Rejects (newest first)"), style="bold"), classes="section")
        yield NewestFirstTable(REJECT_COLUMNS, drop=REJECT_DROP, shorten=REJECT_SHORTEN, id="rejects-table")
        yield Static(Text(_("Rejected files (newest first; %(command)s)", command="ussd-console files --state rejected"),
                          style="bold"),
                     classes="section", id="rejected-files-label")
        yield NewestFirstTable(FILE_COLUMNS, id="rejected-files-table")

    def minute_bound(self) -> bool:
        return True  # the sparkline's window moves with the clock

    @staticmethod
    def load(receiver, params, now) -> ActivityData:
        return ActivityData(
            feed=receiver.activity(limit=PAGE),
            arrivals=receiver.arrivals_per_minute(MINUTES, now=now),
            per_source=receiver.per_source(),
            rejects=receiver.rejects(limit=PAGE),
            files=file_counts(receiver),
            rejected_files=inbox_files(receiver, state="rejected", limit=PAGE),
            gateways=gateway_counts(receiver.db),
        )

    def show(self, data: ActivityData) -> None:
        arrivals = data.arrivals
        label = Text(_("Arrivals per minute, last hour:") + " ", style="bold")
        label.append(_("this minute %(now)s, peak %(peak)s, hour total %(total)s", now=count(arrivals[-1] if arrivals else 0),
                       peak=count(max(arrivals, default=0)), total=count(sum(arrivals))))
        self.query_one("#arrivals-label", Static).update(label)
        self.query_one("#arrivals", Sparkline).data = arrivals
        health = self.app.health or {}
        self.query_one("#per-path", Static).update(
            per_path_table(data.per_source, data.files, health.get("claims_lost"), data.gateways)
        )
        self.query_one("#feed-table", KeyedTable).sync([
            (str(a.id), (
                Text(clock_time(a.ts)), outcome(a.outcome), reason(a.reason), safe(a.frame_id, 64),
                where(a.file, a.line), safe(a.source, 16),
            ))
            for a in data.feed
        ])
        self.rejects = {str(r.id): r for r in data.rejects}
        self.query_one("#rejects-table", KeyedTable).sync([
            (str(r.id), (
                Text(stamp(r.ts)), where(r.file, r.line), safe(r.frame_id, 64),
                Text(explain_reject(r.frame_id, r.frame_text, r.reason)), safe(r.frame_text, 80),
            ))
            for r in data.rejects
        ])
        # Shown only when there is one: on a small terminal the feed keeps its room otherwise.
        any_rejected = bool(data.rejected_files)
        self.query_one("#rejected-files-label", Static).display = any_rejected
        self.query_one("#rejected-files-table", KeyedTable).display = any_rejected
        self.query_one("#rejected-files-table", KeyedTable).sync([
            (f"{f.archived_as or f.name}@{f.claimed_at}", (
                Text(stamp(f.finished_at or f.claimed_at)), basename(f.name, 32), safe(f.path, 16),
                safe(f.reason or "-", 120), safe(f.archived_as or "-", 48),
            ))
            for f in data.rejected_files
        ])

    @on(DataTable.RowSelected, "#rejects-table")
    def _reject_selected(self, event: DataTable.RowSelected) -> None:
        row = self.rejects.get(event.row_key.value)
        if row is not None:
            self.app.push_screen(RejectDialog(row))
