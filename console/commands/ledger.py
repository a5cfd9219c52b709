"""Ingest files by hand and read the ledger: ingest, status, cases, ranking, quarantine,
rejects, evictions, evict, retention."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import stat
import sys
import time
from collections import Counter
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from console.errors import CommandError
from console.exports import default_target, write_csv, write_export
from console.render import make_console, print_json, safe, table, when
from core.alerts import load_alerts_config
from core.config import load_inbox_config
from core.inbox import claimed_dir, deliver_until_done, file_counts, files_by_state, hold_after_commit, quiet_skip
from core.inbox.spreadsheets import sheet_rows
from core.ops.health import gather
from core.backup.schedule import status as backup_status, words as backup_words
from core.rules.explain import explain_reject, outcome_words, reason_words
from core.rules.formats import FormatError, read_items, spreadsheet_kind, table_items
from core.rules.frame import NEED_NAMES
from core.rules.retention import describe

from .audit import print_retention_fault

PRINT_LIMIT = 1000  # per-frame rows printed for people; --json prints every one
PROGRESS_FROM = 5000  # frames; smaller files finish before a bar is worth drawing
BATCH = 20_000


def register(sub, common) -> None:
    p = sub.add_parser(
        "ingest", parents=[common], help="take in frame files by hand (arrival path 'cli')",
        description="Take in frame files by hand. Every frame gets one outcome; re-running a file is safe "
                    "(what is already in comes back as duplicates, nothing is applied twice).",
        epilog=examples("ussd-console ingest kakuma-0800.txt",
                        "ussd-console ingest --summary big-export.csv",
                        "ussd-console ingest --json day.txt > verdicts.jsonl"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="frame files: 'frame_id frame' lines, gateway CSV exports or JSON lines")
    p.add_argument("--summary", action="store_true",
                   help="no line per frame: only the counts by outcome and reason "
                        f"(the default for {PROGRESS_FROM:,} frames or more)")
    p.set_defaults(handler=cmd_ingest, writes=True)

    p = sub.add_parser("status", parents=[common], help="totals, per-path counts and retention")
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser(
        "cases", parents=[common], help="the applied ledger, one page",
        epilog=examples("ussd-console cases --filter water", "ussd-console cases --since 2025-05-01 --until 2025-05-07",
                        "ussd-console cases --sort headcount --limit 20"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_paging(p)
    p.add_argument("--sort", default="first_seen", help="first_seen, frame_id, site, need, headcount, pri")
    p.add_argument("--asc", action="store_true", help="ascending (default newest or largest first)")
    p.add_argument("--filter", default=None, metavar="TEXT",
                   help="text to find in the site, the need (code or name: water finds WAT) or the frame id")
    p.add_argument("--since", type=date_arg, metavar="DATE", help="first seen on or after DATE (YYYY-MM-DD[ HH:MM])")
    p.add_argument("--until", type=date_arg_end, metavar="DATE", help="first seen on or before DATE (that whole day)")
    p.set_defaults(handler=cmd_cases)

    p = sub.add_parser("ranking", parents=[common],
                       help="dispatch order of open and dispatched cases: priority, then people, then first seen",
                       epilog=examples("ussd-console ranking --limit 20", "ussd-console ranking --all",
                                       "ussd-console ranking --csv", "ussd-console ranking --csv - | head"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_paging(p)
    p.add_argument("--all", action="store_true", help="served and closed cases too")
    p.add_argument("--csv", nargs="?", const="", default=None, metavar="PATH",
                   help="write the whole dispatch list as CSV (default <home>/exports/dispatch-<time>.csv; - for stdout)")
    p.add_argument("--force", action="store_true", help="with --csv PATH: replace an existing file")
    p.set_defaults(handler=cmd_ranking)

    p = sub.add_parser("quarantine", parents=[common], help="conflicts waiting for an operator")
    p.add_argument("--all", action="store_true", help="resolved ones too")
    add_paging(p, offset=False)
    p.set_defaults(handler=cmd_quarantine)

    p = sub.add_parser("rejects", parents=[common],
                       help="lines that were not valid frames, newest first, with what was wrong")
    add_paging(p, offset=False)
    p.set_defaults(handler=cmd_rejects)

    p = sub.add_parser("evictions", parents=[common], help="the eviction log")
    add_paging(p, offset=False)
    p.set_defaults(handler=cmd_evictions)

    p = sub.add_parser("evict", parents=[common],
                       help="forget frame ids older than the retention now (cases stay; logged)")
    p.set_defaults(handler=cmd_evict, writes=True)


def examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def add_paging(p, offset: bool = True) -> None:
    p.add_argument("--limit", type=int, default=50, metavar="N", help="show at most N rows (default 50)")
    if offset:
        p.add_argument("--offset", type=int, default=0, metavar="N", help="skip the first N rows (the next page)")


DATE_FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S")


def _date(text: str) -> tuple[dt.datetime, bool]:
    for fmt in DATE_FORMATS:
        try:
            return dt.datetime.strptime(text.strip(), fmt), fmt == "%Y-%m-%d"
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"{text!r} is not a date like 2025-05-08 or 2025-05-08 14:30")


def date_arg(text: str) -> float:
    """A local date or time as a timestamp (the start of the day for a bare date)."""
    return _date(text)[0].timestamp()


def date_arg_end(text: str) -> float:
    """The end of the period ``text`` names: a bare date includes that whole day."""
    when_, whole_day = _date(text)
    return (when_ + (dt.timedelta(days=1) if whole_day else dt.timedelta(seconds=1))).timestamp()


def _read_items(path: Path, max_bytes: int):
    """A regular file's items. A FIFO or a device would block or never end, so they are refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
    # Checked on the descriptor before wrapping it: fdopen itself refuses a directory with a
    # bare errno that names no file.
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise CommandError(f"{path} is not a regular file")
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > max_bytes:
            raise CommandError(f"{path} is over the size limit ({st.st_size} > {max_bytes} bytes)")
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
    if len(data) > max_bytes:
        raise CommandError(f"{path} is over the size limit (more than {max_bytes} bytes)")
    try:
        if spreadsheet_kind(path.name):
            items = table_items(sheet_rows(data, max_bytes))
        else:
            items, _fmt = read_items(path.name, data)
    except FormatError as exc:
        raise CommandError(f"{path}: {exc}") from exc
    return [(fid, frame, str(path), line) for fid, frame, line in items]


def _in_inbox(home, path: Path) -> bool:
    """A file in the inbox goes through the inbox's own delivery (claimed, archived), never around it."""
    parent = Path(os.path.abspath(path)).parent.resolve()
    return parent in (home.inbox.resolve(), claimed_dir(home).resolve())


def _check_inbox_file(path: Path) -> None:
    reason = quiet_skip(path.name) if path.parent.name != ".claimed" else None
    if reason:
        raise CommandError(f"{path}: a {reason} in the inbox is never read")
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise CommandError(f"{path} is not a regular file")


def cmd_ingest(args, ctx) -> int:
    # Read every file first: a bad path stops the command before anything is applied.
    # Files in the inbox are only checked here; `deliver` claims and reads them.
    files = []
    config = load_inbox_config(ctx.home.config)
    for f in args.files:
        path = Path(f)
        if _in_inbox(ctx.home, path):
            _check_inbox_file(path)
            files.append((path, None))
        else:
            files.append((path, _read_items(path, config.max_file_bytes)))
    receiver = ctx.receiver
    total = sum(len(items) for _, items in files if items is not None)
    # Big files (or --summary): a bar while it runs, then counts; a line per frame would scroll
    # the counts away. --json always prints every verdict.
    big = total >= PROGRESS_FROM
    per_frame = not ctx.json and not args.summary and not big
    tally: Counter = Counter()
    committed = 0
    shown = 0
    out = make_console()
    rows = []
    progress = None
    if big and not ctx.json:
        progress = Progress(
            TextColumn("ingesting"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            console=make_console(stderr=True), transient=True,
        )
        progress.start()
        task = progress.add_task("ingest", total=total)
    notes = []

    def batches(path, items):
        if items is not None:
            for start in range(0, len(items), BATCH):
                verdicts = receiver.ingest_many(items[start : start + BATCH], source="cli")
                yield verdicts
                hold_after_commit(path.name, start + len(verdicts))
            return
        result = deliver_until_done(path, "cli", receiver, ctx.home, config)
        if result.status == "rejected":
            notes.append(f"{result.name}: rejected ({result.reason}), moved to {result.archived}")
        elif result.status == "done":
            notes.append(f"{result.name}: moved to {result.archived}")
        else:
            notes.append(f"{result.name}: {result.status} ({result.reason})")
        yield result.verdicts

    try:
        for path, items in files:
            for verdicts in batches(path, items):
                committed += len(verdicts)
                for v in verdicts:
                    tally[(v.outcome.value, v.reason)] += 1
                    if ctx.json:
                        print_json(v.as_dict())
                    elif per_frame and shown < PRINT_LIMIT:
                        rows.append((os.path.basename(v.file or ""), v.line, v.frame_id,
                                     outcome_words(v.outcome.value), reason_words(v.reason)))
                        shown += 1
                if progress is not None:
                    progress.advance(task, len(verdicts))
    except KeyboardInterrupt:
        if progress is not None:
            progress.stop()
            progress = None
        print(f"ussd-console: interrupted; {plural(committed, 'frame')} committed before the stop"
              + (f" (of {total:,})" if total else "")
              + "; re-running the same command is safe: what is in comes back as duplicates, "
                "nothing is applied twice", file=sys.stderr)
        return 130
    finally:
        if progress is not None:
            progress.stop()
    if not ctx.json:
        if rows:
            out.print(table("Verdicts", ["file", "line", "frame_id", "outcome", "reason"], rows,
                            codes=("file", "line", "frame_id")))
        if sum(tally.values()) > shown and per_frame:
            out.print(f"... and {sum(tally.values()) - shown:,} more (--json prints every verdict)")
        t = receiver.totals()
        for note in notes:
            out.print(safe(note, 400))
        out.print(summary_table(tally))
        out.print(Text(f"ledger: {plural(t['cases'], 'case')}, {plural(t['headcount_total'], 'person', 'people')}; "
                       f"{plural(t['conflicts_open'], 'conflict')} open"))
    return 0


OUTCOME_ORDER = ["APPLIED", "DUPLICATE", "CONFLICT_QUARANTINED", "REJECT_BAD_FORMAT", "REJECT_BAD_CRC"]


def summary_table(tally: Counter):
    """Frames by outcome and reason, in plain words (the codes are in --json)."""
    total = sum(tally.values())
    rows = [(outcome_words(o), reason_words(r), f"{n:,}") for (o, r), n in
            sorted(tally.items(), key=lambda kv: (OUTCOME_ORDER.index(kv[0][0])
                                                  if kv[0][0] in OUTCOME_ORDER else 99, -kv[1]))]
    return table(f"{plural(total, 'frame')}" if total else "no frames", ["outcome", "reason", "frames"], rows,
                 codes=("frames",))


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def cmd_status(args, ctx) -> int:
    r = ctx.receiver
    t = r.totals()
    per_source = r.per_source()
    files = file_counts(r)
    states = files_by_state(r)
    policy = r.retention()
    health = gather(ctx.home, r, _alert_targets(ctx.home))
    if ctx.json:
        print_json({**t, "per_source": per_source, "files_per_path": files, "retention": policy,
                    "files_rejected": states["rejected"], "files_by_state": states,
                    "home": str(ctx.home.root), "health": health, "backup": backup_status(ctx.home)})
        return 0
    out = make_console()
    out.print(Text.assemble("home ", safe(str(ctx.home.root), 1000)))  # a path may hold any byte
    out.print(table("Totals", ["cases", "people", "duplicates", "conflicts open", "rejects", "frame ids kept"], [
        (t["cases"], t["headcount_total"], t["duplicates"], t["conflicts_open"], t["rejects"], t["seen_frames"]),
    ]))
    out.print(table("Frames per arrival path", ["path", *PATH_WORDS.values()], [
        (PATH_NAMES.get(src, src), *(counts.get(o, 0) for o in PATH_WORDS))
        for src, counts in sorted(per_source.items())
    ], codes=("path",)))
    out.print(table("Inbox files", ["arrival path", "files"],
                    [(PATH_NAMES.get(src, src), n) for src, n in sorted(files.items())], codes=("arrival path",)))
    out.print(Text("files: " + ", ".join(f"{n} {state}" for state, n in states.items())
                   + ("  (ussd-console files --state rejected)" if states["rejected"] else "")))
    by_status = t["cases_by_status"]
    out.print(Text("cases by status: " + ", ".join(f"{k} {v}" for k, v in by_status.items())))
    out.print(Text(f"retention: {retention_words(policy)}"))
    print_retention_fault(policy)
    out.print(_health_line(health))
    out.print(safe(backup_words(backup_status(ctx.home)), 1000))
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


def retention_words(policy: dict) -> str:
    """"30 days (the default)", "10 days (signed exception by alice)", "45 days (set by alice)"."""
    if policy["set_by"] == "default":
        return f"{describe(policy['retention_seconds'])} (the default)"
    kind = "signed exception" if policy["is_exception"] else "set"
    return f"{describe(policy['retention_seconds'])} ({kind} by {policy['set_by']})"


def _alert_targets(home) -> list[str]:
    try:
        return sorted(load_alerts_config(home.config).targets)
    except ValueError:
        return []  # status still answers; watch and the console refuse the bad setting with its key


def _health_line(h: dict) -> Text:
    who = ", ".join(f"{p['role']} pid {p['pid']}" for p in h["receiver"]["processes"]) or "NONE"
    line = (f"receiver: {who} | observer {h['observer']} | sweep {h['sweep']} | last sweep {when(h['last_sweep_at'])}"
            f" | last frame {when(h['last_frame_at'])} | alerts pending {h['outbox_pending']} | "
            f"faults {h['faults_open']}")
    return Text(line + "".join(f"\n  ! {f}" for f in h["faults"]))


def cmd_cases(args, ctx) -> int:
    r = ctx.receiver
    rows = r.cases(limit=args.limit, offset=args.offset, sort=args.sort, descending=not args.asc, filter=args.filter,
                   since=args.since, until=args.until)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    total = r.count_cases(args.filter, since=args.since, until=args.until)
    make_console().print(table(
        f"Cases {args.offset + 1 if rows else 0}-{args.offset + len(rows)} of {total}",
        ["frame_id", "site", "need", "people", "pri", "first seen", "version", "status"],
        [(c["frame_id"], c["site"], need_words(c["need"]), c["headcount"], c["pri"], minute(c["first_seen"]),
          c["version"], c["status"] + (" ! DISPUTED" if c["disputed"] else "")) for c in rows],
        codes=("frame_id", "site", "people", "pri", "first seen", "version"),
    ))
    return 0


def minute(ts: float | None) -> str:
    """A table's time to the minute: the seconds are in --json, the columns are for the rest."""
    return when(ts)[:16]


def need_words(code: str) -> str:
    name = NEED_NAMES.get(code)
    return f"{code} {name}" if name else code


def cmd_ranking(args, ctx) -> int:
    if args.csv is not None:
        return _ranking_csv(args, ctx)
    rows = ctx.receiver.ranking(limit=args.limit, offset=args.offset, include_done=args.all)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    make_console().print(table(
        "Dispatch ranking" + (" (every case)" if args.all else " (open and dispatched cases)"),
        ["rank", "frame_id", "site", "need", "people", "pri", "status", "first seen"],
        [(c["rank"], c["frame_id"], c["site"], need_words(c["need"]), c["headcount"], c["pri"],
          c["status"] + (" ! DISPUTED" if c["disputed"] else ""), minute(c["first_seen"])) for c in rows],
        codes=("rank", "frame_id", "site", "people", "pri", "first seen"),
    ))
    return 0


def _ranking_csv(args, ctx) -> int:
    receiver = ctx.receiver  # first: a missing home is an error before any exports folder is made
    if args.csv == "-":
        try:
            write_csv(receiver, "ranking", sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:  # `| head` closed the pipe: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    target = Path(args.csv) if args.csv else default_target(ctx.home.exports, "ranking", "csv", time.time())
    rows = write_export(receiver, "ranking", target, "csv", force=args.force)
    if ctx.json:
        print_json({"path": str(target), "cases": rows})
    else:
        make_console().print(Text(f"{rows} cases in dispatch order written to {target}"), soft_wrap=True)
    return 0


def cmd_quarantine(args, ctx) -> int:
    rows = ctx.receiver.quarantine(status=None if args.all else "open", limit=args.limit)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    columns = ["id", "frame_id", "first / new version", "what differs", "seen"]
    if args.all:
        columns.append("status")
    make_console().print(table(
        "Quarantine" + ("" if args.all else " (open)"), columns,
        [(q["id"], q["frame_id"], safe("first: " + q["first_text"]) + Text("\n") + safe("new:   " + q["frame_text"]),
          reason_words(q["reason"]), q["seen_count"], *((q["status"],) if args.all else ())) for q in rows],
        codes=("id", "frame_id", "first / new version", "seen", "status"),
    ))
    if rows and not args.all:
        make_console().print(Text("resolve with: ussd-console resolve ID --keep-first (or --accept-correction) "
                                  "--operator NAME --reason TEXT"))
    return 0


def cmd_rejects(args, ctx) -> int:
    rows = ctx.receiver.rejects(limit=args.limit)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    make_console().print(table(
        "Rejects (newest first)", ["file:line, when", "frame_id", "the line, and what was wrong"],
        [(reject_where(x) + Text("\n" + when(x["ts"]), style="dim"), x["frame_id"],
          safe(x["frame_text"], 200) + Text("\n") + Text(explain_reject(x["frame_id"], x["frame_text"], x["reason"]),
                                                          style="bold"))
         for x in rows],
        codes=("file:line, when", "frame_id"),
    ))
    return 0


def reject_where(x: dict) -> Text:
    name = os.path.basename(x["file"] or "")
    if not name:
        return safe(f"({x['source']})")
    return safe(name, 60) + Text(f":{x['line']}" if x["line"] is not None else "")


def _eviction_rows(rows):
    return [(minute(e["ran_at"]), describe(e["retention_seconds"]), e["removed"],
             f"{minute(e['oldest'])}\n{minute(e['newest'])}" if e["removed"] else "-", e["started_by"])
            for e in rows]


# The cutoff is "ran at" minus the policy; --json has it and every time to the second.
EVICTION_COLUMNS = ["ran at", "policy", "removed", "first seen of those removed", "started by"]


def cmd_evictions(args, ctx) -> int:
    rows = ctx.receiver.evictions(limit=args.limit)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    make_console().print(table("Eviction log", EVICTION_COLUMNS, _eviction_rows(rows),
                               codes=("ran at", "policy", "removed", "started by")))
    return 0


def cmd_evict(args, ctx) -> int:
    removed = ctx.receiver.evict(started_by="cli")
    policy = ctx.receiver.retention()
    if ctx.json:
        print_json({"removed": removed, "retention_seconds": policy["retention_seconds"],
                    "retention_fault": policy["fault"]})
    else:
        make_console().print(Text(f"forgot {plural(removed, 'frame id')} first seen more than "
                                  f"{describe(policy['retention_seconds'])} ago; the cases stay"))
        print_retention_fault(policy)
    return 0
