"""``status``: totals, per-path counts, inbox files, retention and the receiver's health."""

from __future__ import annotations

from rich.text import Text

from console.render import assembled, make_console, print_json, safe, table
from core.alerts import pause
from core.backup.schedule import status as backup_status
from core.home import loose_modes
from core.i18n import N_, _, moment, ngettext, number
from core.inbox import file_counts, files_by_state
from core.ops.health import gather
from core.rules.words import NO_RECEIVER

from .audit import print_retention_fault
from .common import alert_targets, retention_words, table_or_none, with_examples
from .gateway import gateway_status, print_gateway_status


def register(sub, common) -> None:
    p = sub.add_parser("status", parents=[common], help=_("totals, per-path counts and retention"),
                       **with_examples("ussd-console status", "ussd-console status --json | jq .health"))
    p.set_defaults(handler=cmd_status)


def cmd_status(args, ctx) -> int:
    r = ctx.receiver
    t = r.totals()
    per_source = r.per_source()
    files = file_counts(r)
    states = files_by_state(r)
    policy = r.retention()
    health = gather(ctx.home, r, alert_targets(ctx.home))
    gateways = gateway_status(r)
    backup = backup_status(ctx.home)
    paused = pause.paused(ctx.home, r.db)
    loose = loose_modes(ctx.home.root)  # the home's own parts others could read or write
    if ctx.json:
        print_json({**t.to_dict(), "per_source": per_source, "files_per_path": files, "retention": policy,
                    "files_rejected": states["rejected"], "files_by_state": states,
                    "home": str(ctx.home.root), "health": health, "gateways": gateways,
                    "home_open_to_others": [str(found) for found in loose], "backup": backup,
                    "alerts_paused": None if paused is None else {
                        "since": paused.get("since"), "restored_from": paused.get("restored_from")}})
        return 0
    out = make_console()
    out.print(assembled(_("home %(path)s"), path=safe(str(ctx.home.root), 1000)))  # a path may hold any byte
    out.print(table(_("Totals"), [_("cases"), _("people"), _("duplicates"), _("conflicts open"), _("rejects"),
                                  _("frame ids kept")], [
        tuple(Text(number(n)) for n in (t.cases, t.headcount_total, t.duplicates, t.conflicts_open, t.rejects,
                                         t.seen_frames)),
    ]))
    path_column = _("path")
    out.print(table_or_none(_("Frames per arrival path"), [path_column, *(_(w) for w in PATH_WORDS.values())], [
        (_path_name(src), *(Text(number(counts.get(o, 0))) for o in PATH_WORDS))
        for src, counts in sorted(per_source.items())
    ], codes=(path_column,)))
    arrival_column = _("arrival path")
    out.print(table_or_none(_("Inbox files"), [arrival_column, _("files")],
                            [(_path_name(src), Text(number(n))) for src, n in sorted(files.items())],
                            codes=(arrival_column,)))
    print_gateway_status(out, gateways)
    listed = ", ".join(_counted(FILE_STATES, state, n) for state, n in states.items())
    hint = "  (ussd-console files --state rejected)" if states["rejected"] else ""
    out.print(Text(_("files: %(counts)s%(hint)s", counts=listed, hint=hint)))
    by_status = ", ".join(_counted(CASE_STATUSES, k, v) for k, v in t.cases_by_status.items())
    out.print(Text(_("cases by status: %(counts)s", counts=by_status)))
    out.print(Text(_("retention: %(policy)s", policy=retention_words(policy))))
    print_retention_fault(policy)
    out.print(_health_line(health))
    if paused is not None:
        out.print(Text("! ") + safe(pause.words(paused), 600))
    out.print(_backup_line(backup))
    for found in loose:
        out.print(Text("! ") + assembled(_("%(path)s is mode %(mode)s, open to others; run: chmod %(private)s %(path)s"),
                                         path=safe(str(found.path), 1000), mode=f"{found.mode:04o}",
                                         private=f"{found.private:04o}"))
    return 0


# How a frame arrived, in words (the codes are in --json); translated where shown.
PATH_NAMES = {"cli": N_("cli (ingest)"), "watch": N_("watch (inbox push)"), "sweep": N_("sweep (inbox pull)")}
PATH_WORDS = {
    "APPLIED": N_("applied"),
    "DUPLICATE": N_("duplicate"),
    "CONFLICT_QUARANTINED": N_("conflict"),
    "REJECT_BAD_FORMAT": N_("bad format"),
    "REJECT_BAD_CRC": N_("bad checksum"),
}


def _path_name(src: str) -> Text:
    """A known path in words; another (a gateway's name) as the store holds it, as plain text."""
    return Text(_(PATH_NAMES[src])) if src in PATH_NAMES else safe(src)


# "3 processed", "1 open": each state a count with its word, which agrees with the count in
# most languages; a state these tables do not know is shown as its code.
FILE_STATES = {
    "processed": lambda n: ngettext("%(n)s processed", "%(n)s processed", n, n=number(n)),
    "rejected": lambda n: ngettext("%(n)s rejected", "%(n)s rejected", n, n=number(n)),
    "claimed": lambda n: ngettext("%(n)s claimed", "%(n)s claimed", n, n=number(n)),
    "vanished": lambda n: ngettext("%(n)s vanished", "%(n)s vanished", n, n=number(n)),
}
CASE_STATUSES = {
    "open": lambda n: ngettext("%(n)s open", "%(n)s open", n, n=number(n)),
    "dispatched": lambda n: ngettext("%(n)s dispatched", "%(n)s dispatched", n, n=number(n)),
    "served": lambda n: ngettext("%(n)s served", "%(n)s served", n, n=number(n)),
    "closed": lambda n: ngettext("%(n)s closed", "%(n)s closed", n, n=number(n)),
}


def _counted(words: dict, code: str, n: int) -> str:
    return words[code](n) if code in words else f"{number(n)} {code}"


def _backup_line(b: dict) -> Text:
    """The backups: the last verified one (its file, as outside text), whether any is scheduled, a fault."""
    last = b.get("last_verified")
    if last:
        line = assembled(_("backups: last verified %(time)s %(file)s (%(size)s)"),
                         time=moment(last["at"], seconds=False), file=safe(last["file"], 600),
                         size=ngettext("%(n)s byte", "%(n)s bytes", last["size"], n=number(last["size"])))
    else:
        line = Text(_("backups: none verified yet"))
    if not b.get("every"):
        line.append(" | " + _("not scheduled ([backup] every in config.toml)"))
    if b.get("fault"):
        line.append(" | ! ")
        line.append_text(safe(b["fault"], 600))
    return line


# The receiver's parts' states (core/ops/health.py), in words.
PART_STATES = {"running": N_("running"), "off": N_("off"), "none": N_("none"), "dead": N_("dead"),
               "restarting": N_("restarting")}


def _health_line(h: dict) -> Text:
    who = ", ".join(_("%(role)s pid %(pid)s", role=p["role"], pid=p["pid"]) for p in h["receiver"]["processes"])
    state = lambda code: _(PART_STATES[code]) if code in PART_STATES else str(code)  # noqa: E731
    parts = [
        _("receiver: %(who)s", who=who or _(NO_RECEIVER)),
        _("observer %(state)s", state=state(h["observer"])),
        _("sweep %(state)s", state=state(h["sweep"])),
        _("last sweep %(time)s", time=moment(h["last_sweep_at"])),
        _("last frame %(time)s", time=moment(h["last_frame_at"])),
        ngettext("%(n)s alert pending", "%(n)s alerts pending", h["outbox_pending"], n=number(h["outbox_pending"])),
        ngettext("%(n)s fault", "%(n)s faults", h["faults_open"], n=number(h["faults_open"])),
    ]
    return Text(" | ".join(parts) + "".join(f"\n  ! {f}" for f in h["faults"]))
