"""Retention: the policy in force, signed exceptions, the next eviction and the eviction log."""

from __future__ import annotations

from pathlib import PurePath
from typing import NamedTuple

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from core.i18n import _, N_, ngettext
from console.render import assembled, safe
from console.ui_text import count, number, stamp
from console.widgets.keyed_table import KeyedTable
from core.backup.schedule import BackupListing
from core.backup.schedule import listing as backup_listing
from core.rules.retention import EXCEPTION_BELOW, FLOOR_SECONDS, describe
from core.rules.text import in_language
from core.store.records import Eviction, Policy, PolicyChange, Witnesses

from console import actions

from .panel import Panel

EXCEPTION_COLUMNS = [
    ("set_at", N_("signed at")),
    ("retention", N_("retention")),
    ("set_by", N_("by")),
    ("reason", N_("reason")),
]
EVICTION_COLUMNS = [
    ("ran_at", N_("ran at")),
    ("policy", N_("policy")),
    ("cutoff", N_("cutoff")),
    ("removed", N_("removed")),
    ("oldest", N_("oldest")),
    ("newest", N_("newest")),
    ("by", N_("by")),
]
BACKUP_COLUMNS = [
    ("at", N_("written at")),
    ("file", N_("file")),
    ("size", N_("size")),
    ("verified", N_("verified")),
]


class RetentionData(NamedTuple):
    """One load of the Retention screen."""

    policy: Policy
    history: list[PolicyChange]
    witnesses: Witnesses
    evictions: list[Eviction]
    backups: BackupListing


def policy_text(policy: Policy) -> Text:
    """The policy in force in the operator's words, bold: how long, and who set it when."""
    shown = describe(policy.retention_seconds)
    if policy.set_by == "default":
        out = assembled(_("%(policy)s (default)"), policy=shown)
    elif policy.is_exception:
        out = assembled(_("%(policy)s%(exception)s by %(operator)s at %(when)s"), policy=shown,
                        exception=Text(" " + _("SIGNED EXCEPTION"), style="bold reverse"),
                        operator=safe(policy.set_by, 24), when=stamp(policy.set_at))
    else:
        out = assembled(_("%(policy)s set by %(operator)s at %(when)s"), policy=shown,
                        operator=safe(policy.set_by, 24), when=stamp(policy.set_at))
    out.style = "bold"
    return out


class RetentionPanel(Panel):
    TAB_ID = "retention"
    TITLE = N_("Retention")
    BINDINGS = actions.bindings(TAB_ID)

    def compose(self):
        yield Static(id="retention-summary")
        yield Static(Text(_("Signed exceptions"), style="bold"), classes="section")
        yield Static(Text(_("none: the policy has never gone below 30 days"), style="dim"), id="exceptions-none")
        yield KeyedTable(EXCEPTION_COLUMNS, id="exceptions-table")
        yield Static(Text(_("Eviction log (newest first)"), style="bold"), classes="section")
        # At 80 columns each run's policy goes before any date is cut, as `ussd-console evictions` does.
        yield KeyedTable(EVICTION_COLUMNS, drop=("policy",), id="evictions-table")
        yield Static(Text(_("Backups (newest first)"), style="bold"), classes="section")
        yield Static(id="backups-summary")
        yield KeyedTable(BACKUP_COLUMNS, id="backups-table")

    def minute_bound(self) -> bool:
        return True  # the count due for eviction grows with the clock

    def params(self):
        return (self.app.next_eviction_at, self.app.home)

    @staticmethod
    def load(receiver, params, now) -> RetentionData:
        return RetentionData(
            policy=receiver.retention_policy(),
            history=receiver.retention_history(limit=50),
            witnesses=receiver.witnesses(now),
            evictions=receiver.evictions(limit=100),
            backups=backup_listing(params[1]),
        )

    def show(self, data: RetentionData) -> None:
        policy, witnesses = data.policy, data.witnesses
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column()
        if policy.fault:
            # TRANSLATORS: the mark before a fault on the Retention screen, in capitals as the header's.
            grid.add_row(Text(_("FAULT"), style="bold reverse"), safe(in_language(policy.fault), 400))
        grid.add_row(_("Policy in force"), policy_text(policy))
        if policy.reason:
            grid.add_row(_("Reason"), safe(policy.reason, 120))
        grid.add_row(_("Rule"), Text(_("under %(policy)s needs a signed exception; never under %(hours)s hours",
                                       policy=describe(EXCEPTION_BELOW), hours=FLOOR_SECONDS // 3600)))
        oldest = witnesses.oldest
        # "Frame ids kept" in words: the ids remembered so that a re-sent frame is caught as a duplicate.
        kept = (_("%(n)s, to catch re-sends", n=count(witnesses.kept)) if oldest is None else  # one line at 80
                _("%(n)s, to catch re-sends; oldest %(oldest)s goes %(goes)s", n=count(witnesses.kept),
                  oldest=stamp(oldest), goes=stamp(oldest + policy.retention_seconds)))
        grid.add_row(_("Frame ids kept"), Text(kept))
        grid.add_row(_("Due now"), Text(_("%(n)s older than the cutoff %(cutoff)s", n=count(witnesses.due),
                                          cutoff=stamp(witnesses.cutoff))))
        due_at = self.app.next_eviction_at
        grid.add_row(_("Next eviction"), Text(
            _("%(when)s (hourly, by this console); e: evict now (cases stay)", when=stamp(due_at)) if due_at
            else _("not scheduled by this console; e: evict now (cases stay)")))
        self.query_one("#retention-summary", Static).update(grid)
        exceptions = [p for p in data.history if p.is_exception]
        self.query_one("#exceptions-none").display = not exceptions
        self.query_one("#exceptions-table").display = bool(exceptions)
        self.query_one("#exceptions-table", KeyedTable).sync([
            (str(p.id), (Text(stamp(p.set_at)), Text(describe(p.retention_seconds)),
                          safe(p.set_by, 24), safe(p.reason, 60)))
            for p in exceptions
        ])
        self.query_one("#evictions-table", KeyedTable).sync([
            (str(e.id), (Text(stamp(e.ran_at)), Text(describe(e.retention_seconds)), Text(stamp(e.cutoff)),
                         number(e.removed), Text(stamp(e.oldest)), Text(stamp(e.newest)), safe(e.started_by, 24)))
            for e in data.evictions
        ])
        self._show_backups(data.backups)
        # Focused before this first show, the exceptions table may just have been hidden with the
        # keyboard on it: hand the keyboard to the table on display, as focus_main does.
        if self.app.focused in (None, self.query_one("#exceptions-table")) and self.app.panel() is self:
            self.focus_main()

    def _show_backups(self, backups: BackupListing) -> None:
        line = Text()
        if backups.fault:
            line.append(_("FAULT"), style="bold reverse")
            line.append(" ")
            line.append_text(safe(backups.fault, 300))
            line.append("\n")
        if backups.folder is not None:
            n = len(backups.rows)
            # TRANSLATORS: the count of backup files in the backup folder, and that folder.
            line.append_text(assembled(ngettext("%(n)s in %(folder)s", "%(n)s in %(folder)s", n), n=count(n),
                                       folder=safe(backups.folder, 200)))
            line.append("; " + (_("every %(span)s, keeping %(keep)s", span=describe(backups.every),
                                  keep=count(backups.keep)) if backups.every
                                else _("not scheduled ([backup] every in config.toml)")))
        last = backups.last_verified
        if last:  # wherever it was written: a stick elsewhere counts as much as the folder here
            where = PurePath(last["file"])
            line.append("\n")
            line.append_text(assembled(_("last verified: %(file)s in %(folder)s, made %(time)s"),
                                       file=safe(where.name, 60), folder=safe(str(where.parent), 200),
                                       time=stamp(last["at"])))
        self.query_one("#backups-summary", Static).update(line)
        self.query_one("#backups-table").display = bool(backups.rows)
        self.query_one("#backups-table", KeyedTable).sync([
            (b.file, (Text(stamp(b.at)), safe(b.file, 60), Text(f"{b.size:,} B"),
                      Text(_("verified") if b.verified else _("NOT VERIFIED"), style="" if b.verified else "bold")))
            for b in backups.rows
        ])
