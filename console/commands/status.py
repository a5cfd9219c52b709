"""``status``: totals, per-path counts, inbox files, retention and the receiver's health."""

from __future__ import annotations

from rich.text import Text

from console.render import make_console, print_json, safe, table, when
from core.alerts import pause
from core.backup.schedule import status as backup_status, words as backup_words
from core.home import looser_than_private
from core.inbox import file_counts, files_by_state
from core.ops.health import gather
from core.rules.words import NO_RECEIVER

from .audit import print_retention_fault
from .common import alert_targets, retention_words, table_or_none, with_examples
from .gateway import gateway_status, print_gateway_status


def register(sub, common) -> None:
    p = sub.add_parser("status", parents=[common], help="totals, per-path counts and retention",
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
    loose = looser_than_private(ctx.home.root)  # the home's own parts others could read or write
    if ctx.json:
        print_json({**t.to_dict(), "per_source": per_source, "files_per_path": files, "retention": policy,
                    "files_rejected": states["rejected"], "files_by_state": states,
                    "home": str(ctx.home.root), "health": health, "gateways": gateways,
                    "home_open_to_others": loose, "backup": backup,
                    "alerts_paused": None if paused is None else {
                        "since": paused.get("since"), "restored_from": paused.get("restored_from")}})
        return 0
    out = make_console()
    out.print(Text.assemble("home ", safe(str(ctx.home.root), 1000)))  # a path may hold any byte
    out.print(table("Totals", ["cases", "people", "duplicates", "conflicts open", "rejects", "frame ids kept"], [
        (t.cases, t.headcount_total, t.duplicates, t.conflicts_open, t.rejects, t.seen_frames),
    ]))
    out.print(table_or_none("Frames per arrival path", ["path", *PATH_WORDS.values()], [
        (PATH_NAMES.get(src, src), *(counts.get(o, 0) for o in PATH_WORDS))
        for src, counts in sorted(per_source.items())
    ], codes=("path",)))
    out.print(table_or_none("Inbox files", ["arrival path", "files"],
                            [(PATH_NAMES.get(src, src), n) for src, n in sorted(files.items())],
                            codes=("arrival path",)))
    print_gateway_status(out, gateways)
    out.print(Text("files: " + ", ".join(f"{n} {state}" for state, n in states.items())
                   + ("  (ussd-console files --state rejected)" if states["rejected"] else "")))
    by_status = t.cases_by_status
    out.print(Text("cases by status: " + ", ".join(f"{k} {v}" for k, v in by_status.items())))
    out.print(Text(f"retention: {retention_words(policy)}"))
    print_retention_fault(policy)
    out.print(_health_line(health))
    if paused is not None:
        out.print(Text("! ") + safe(pause.words(paused), 600))
    out.print(safe(backup_words(backup), 1000))
    for line in loose:
        out.print(Text.assemble("! ", safe(line, 1000)))
    return 0


# How a frame arrived, in words (the codes are in --json).
PATH_NAMES = {"cli": "cli (ingest)", "watch": "watch (inbox push)", "sweep": "sweep (inbox pull)"}
PATH_WORDS = {
    "APPLIED": "applied",
    "DUPLICATE": "duplicate",
    "CONFLICT_QUARANTINED": "conflict",
    "REJECT_BAD_FORMAT": "bad format",
    "REJECT_BAD_CRC": "bad checksum",
}


def _health_line(h: dict) -> Text:
    who = ", ".join(f"{p['role']} pid {p['pid']}" for p in h["receiver"]["processes"]) or NO_RECEIVER
    line = (f"receiver: {who} | observer {h['observer']} | sweep {h['sweep']} | last sweep {when(h['last_sweep_at'])}"
            f" | last frame {when(h['last_frame_at'])} | alerts pending {h['outbox_pending']} | "
            f"faults {h['faults_open']}")
    return Text(line + "".join(f"\n  ! {f}" for f in h["faults"]))
