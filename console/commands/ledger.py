"""Ingest files by hand and read the ledger: ingest, status, cases, ranking, quarantine,
rejects, evictions, evict, retention."""

from __future__ import annotations

import os
import stat
import sys
import time
from collections import Counter
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from console.errors import CommandError
from console.exports import export_path, write_dispatch_csv, write_rows
from console.render import make_console, print_json, safe, table, when
from core.config import load_inbox_config
from core.inbox import claimed_dir, deliver_until_done, file_counts, files_by_state, quiet_skip
from core.inbox.spreadsheets import sheet_rows
from core.rules.formats import FormatError, read_items, spreadsheet_kind, table_items
from core.rules.retention import describe

PRINT_LIMIT = 1000  # per-frame rows printed for people; --json prints every one
PROGRESS_FROM = 5000  # frames; smaller files finish before a bar is worth drawing
BATCH = 20_000


def register(sub, common) -> None:
    p = sub.add_parser("ingest", parents=[common], help="ingest frame files by hand (source 'cli')")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.set_defaults(handler=cmd_ingest)

    p = sub.add_parser("status", parents=[common], help="totals, per-path counts and retention")
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser("cases", parents=[common], help="the applied ledger, one page")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--sort", default="first_seen", help="first_seen, frame_id, site, need, headcount, pri")
    p.add_argument("--asc", action="store_true", help="ascending (default newest or largest first)")
    p.add_argument("--filter", default=None, help="text to find in site, need or frame id")
    p.set_defaults(handler=cmd_cases)

    p = sub.add_parser("ranking", parents=[common], help="dispatch order: pri, then headcount, then first seen")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--csv", nargs="?", const="", default=None, metavar="PATH",
                   help="write the whole dispatch list as CSV (default <home>/exports/dispatch-<time>.csv; - for stdout)")
    p.set_defaults(handler=cmd_ranking)

    p = sub.add_parser("quarantine", parents=[common], help="conflicts waiting for an operator")
    p.add_argument("--all", action="store_true", help="resolved ones too")
    p.add_argument("--limit", type=int, default=50)
    p.set_defaults(handler=cmd_quarantine)

    p = sub.add_parser("rejects", parents=[common], help="frames that were not frames, newest first")
    p.add_argument("--limit", type=int, default=50)
    p.set_defaults(handler=cmd_rejects)

    p = sub.add_parser("evictions", parents=[common], help="the eviction log")
    p.add_argument("--limit", type=int, default=50)
    p.set_defaults(handler=cmd_evictions)

    p = sub.add_parser("evict", parents=[common], help="run age-only eviction now (logged)")
    p.set_defaults(handler=cmd_evict)


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
    tally: Counter = Counter()
    shown = 0
    out = make_console()
    rows = []
    progress = None
    if total >= PROGRESS_FROM and not ctx.json:
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
                yield receiver.ingest_many(items[start : start + BATCH], source="cli")
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
                for v in verdicts:
                    tally[v.outcome.value] += 1
                    if ctx.json:
                        print_json(v.as_dict())
                    elif shown < PRINT_LIMIT:
                        rows.append((os.path.basename(v.file or ""), v.line, v.frame_id, _outcome(v.outcome.value), v.reason))
                        shown += 1
                if progress is not None:
                    progress.advance(task, len(verdicts))
    finally:
        if progress is not None:
            progress.stop()
    if not ctx.json:
        out.print(table("Verdicts", ["file", "line", "frame_id", "outcome", "reason"], rows))
        if sum(tally.values()) > shown:
            out.print(f"... and {sum(tally.values()) - shown} more (use --json for every verdict)")
        summary = ", ".join(f"{k} {v}" for k, v in sorted(tally.items())) or "no frames"
        t = receiver.totals()
        for note in notes:
            out.print(safe(note, 400))
        out.print(Text(f"{sum(tally.values())} frames: {summary}"))
        out.print(Text(f"ledger: {t['cases']} cases, {t['headcount_total']} people; "
                       f"{t['conflicts_open']} conflicts open"))
    return 0


# Status is never colour alone: every outcome keeps its name beside any style.
_STYLES = {
    "APPLIED": "green",
    "DUPLICATE": "dim",
    "CONFLICT_QUARANTINED": "bold yellow",
    "REJECT_BAD_FORMAT": "red",
    "REJECT_BAD_CRC": "red",
}


def _outcome(value: str) -> Text:
    return Text(value, style=_STYLES.get(value, ""))


def cmd_status(args, ctx) -> int:
    r = ctx.receiver
    t = r.totals()
    per_source = r.per_source()
    files = file_counts(r)
    states = files_by_state(r)
    policy = r.retention()
    if ctx.json:
        print_json({**t, "per_source": per_source, "files_per_path": files, "files_rejected": states["rejected"],
                    "files_by_state": states, "retention": policy, "home": str(ctx.home.root)})
        return 0
    out = make_console()
    out.print(Text.assemble("home ", safe(str(ctx.home.root), 1000)))  # a path may hold any byte
    out.print(table("Totals", ["cases", "headcount", "duplicates", "conflicts open", "rejects", "dedup rows"], [
        (t["cases"], t["headcount_total"], t["duplicates"], t["conflicts_open"], t["rejects"], t["seen_frames"]),
    ]))
    outcomes = ["APPLIED", "DUPLICATE", "CONFLICT_QUARANTINED", "REJECT_BAD_FORMAT", "REJECT_BAD_CRC"]
    out.print(table("Frames per arrival path", ["path", *outcomes], [
        (src, *(counts.get(o, 0) for o in outcomes)) for src, counts in sorted(per_source.items())
    ]))
    out.print(table("Inbox files", ["arrival path", "files"], sorted(files.items())))
    out.print(Text("files: " + ", ".join(f"{n} {state}" for state, n in states.items())
                   + ("  (ussd-console files --state rejected)" if states["rejected"] else "")))
    kind = "signed exception" if policy["is_exception"] else "policy"
    out.print(Text(f"retention: {describe(policy['retention_seconds'])} ({kind}, set by {policy['set_by']})"))
    return 0


def cmd_cases(args, ctx) -> int:
    r = ctx.receiver
    rows = r.cases(limit=args.limit, offset=args.offset, sort=args.sort, descending=not args.asc, filter=args.filter)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    total = r.count_cases(args.filter)
    make_console().print(table(
        f"Cases {args.offset + 1 if rows else 0}-{args.offset + len(rows)} of {total}",
        ["frame_id", "site", "need", "headcount", "pri", "first seen", "version"],
        [(c["frame_id"], c["site"], c["need"], c["headcount"], c["pri"], when(c["first_seen"]), c["version"]) for c in rows],
    ))
    return 0


def cmd_ranking(args, ctx) -> int:
    if args.csv is not None:
        return _ranking_csv(args, ctx)
    rows = ctx.receiver.ranking(limit=args.limit, offset=args.offset)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    make_console().print(table(
        "Dispatch ranking", ["rank", "frame_id", "site", "need", "headcount", "pri", "first seen"],
        [(c["rank"], c["frame_id"], c["site"], c["need"], c["headcount"], c["pri"], when(c["first_seen"])) for c in rows],
    ))
    return 0


def _ranking_csv(args, ctx) -> int:
    if args.csv == "-":
        try:
            write_rows(ctx.receiver, sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:  # `| head` closed the pipe: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    target = Path(args.csv) if args.csv else export_path(ctx.home.exports, time.time())
    rows = write_dispatch_csv(ctx.receiver, target)
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
    make_console().print(table(
        "Quarantine" + ("" if args.all else " (open)"),
        ["id", "frame_id", "newcomer", "first", "reason", "seen", "status"],
        [(q["id"], q["frame_id"], q["frame_text"], q["first_text"], q["reason"], q["seen_count"], q["status"]) for q in rows],
    ))
    return 0


def cmd_rejects(args, ctx) -> int:
    rows = ctx.receiver.rejects(limit=args.limit)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    make_console().print(table(
        "Rejects", ["when", "path", "file", "line", "frame_id", "text", "outcome", "reason"],
        [(when(x["ts"]), x["source"], os.path.basename(x["file"] or "") or "-", x["line"], x["frame_id"],
          x["frame_text"], x["outcome"], x["reason"]) for x in rows],
    ))
    return 0


def _eviction_rows(rows):
    return [(when(e["ran_at"]), describe(e["retention_seconds"]), when(e["cutoff"]), e["removed"],
             when(e["oldest"]), when(e["newest"]), e["started_by"]) for e in rows]


EVICTION_COLUMNS = ["ran at", "policy", "cutoff", "removed", "oldest", "newest", "started by"]


def cmd_evictions(args, ctx) -> int:
    rows = ctx.receiver.evictions(limit=args.limit)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    make_console().print(table("Eviction log", EVICTION_COLUMNS, _eviction_rows(rows)))
    return 0


def cmd_evict(args, ctx) -> int:
    removed = ctx.receiver.evict(started_by="cli")
    if ctx.json:
        print_json({"removed": removed})
    else:
        make_console().print(Text(f"evicted {removed} dedup rows older than "
                                  f"{describe(ctx.receiver.retention_seconds())}"))
    return 0
