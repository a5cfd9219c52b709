"""``ingest``: take in frame files by hand (arrival path ``cli``), with a verdict per frame."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections import Counter
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from console.errors import CommandError
from console.render import assembled, make_console, print_json, safe, table
from core.i18n import _, ngettext, number
from core.config import load_inbox_config
from core.inbox import claimed_dir, deliver_until_done, hold_after_commit, quiet_skip
from core.inbox.spreadsheets import sheet_rows
from core.rules.explain import explain_reject, outcome_words, reason_words
from core.rules.formats import FormatError, read_items, spreadsheet_kind, table_items
from core.rules.text import said
from core.store.ledger import HANDOVER_FRAMES

from .common import examples

PRINT_LIMIT = 1000  # per-frame rows printed for people; --json prints every one
PROGRESS_FROM = 5000  # frames; smaller files finish before a bar is worth drawing
BATCH = HANDOVER_FRAMES  # frames per call of the ingest: one transaction each


def register(sub, common) -> None:
    p = sub.add_parser(
        "ingest", parents=[common], help=_("take in frame files by hand (arrival path 'cli')"),
        description=_("Take in frame files by hand. Every frame gets one outcome; re-running a file is safe "
                      "(what is already in comes back as duplicates, nothing is applied twice)."),
        epilog=examples("ussd-console ingest kakuma-0800.txt",
                        "ussd-console ingest --summary big-export.csv",
                        "ussd-console ingest --json day.txt > verdicts.jsonl"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", metavar="FILE",
                   help=_("frame files: 'frame_id frame' lines, gateway CSV exports or JSON lines"))
    p.add_argument("--summary", action="store_true",
                   help=_("no line per frame: only the counts by outcome and reason (the default for %(n)s frames "
                          "or more)", n=number(PROGRESS_FROM)))
    p.set_defaults(handler=cmd_ingest, writes=True)


def _read_items(path: Path, max_bytes: int, site):
    """A regular file's items. A FIFO or a device would block or never end, so they are refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise CommandError.told(_("cannot read %(path)s: %(reason)s"), path=path, reason=exc.strerror) from exc
    # Checked on the descriptor before wrapping it: fdopen itself refuses a directory with a
    # bare errno that names no file.
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise CommandError.told(_("%(path)s is not a regular file"), path=path)
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > max_bytes:
            raise CommandError.told(_("%(path)s is over the size limit (%(size)s > %(limit)s bytes)"), path=path,
                                    ours={"size": number(st.st_size), "limit": number(max_bytes)})
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise CommandError.told(_("cannot read %(path)s: %(reason)s"), path=path, reason=exc.strerror) from exc
    if len(data) > max_bytes:
        raise CommandError.told(_("%(path)s is over the size limit (more than %(limit)s bytes)"), path=path,
                                ours={"limit": number(max_bytes)})
    try:
        if spreadsheet_kind(path.name):
            items = table_items(sheet_rows(data, max_bytes), site)
        else:
            items, _fmt = read_items(path.name, data, site)
    except FormatError as exc:
        raise CommandError.told(_("%(path)s: %(reason)s"), path=path, ours={"reason": said(exc)}) from exc
    return [(fid, frame, str(path), line) for fid, frame, line in items]


def _in_inbox(home, path: Path) -> bool:
    """A file in the inbox goes through the inbox's own delivery (claimed, archived), never around it."""
    parent = Path(os.path.abspath(path)).parent.resolve()
    return parent in (home.inbox.resolve(), claimed_dir(home).resolve())


def _check_inbox_file(path: Path) -> None:
    reason = quiet_skip(path.name) if path.parent.name != ".claimed" else None
    if reason:
        raise CommandError.told(_("%(path)s: a %(kind)s in the inbox is never read"), path=path, kind=reason)
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise CommandError.told(_("cannot read %(path)s: %(reason)s"), path=path, reason=exc.strerror) from exc
    if not stat.S_ISREG(st.st_mode):
        raise CommandError.told(_("%(path)s is not a regular file"), path=path)


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
            files.append((path, _read_items(path, config.max_file_bytes, config.columns)))
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
            TextColumn(_("ingesting")), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            console=make_console(stderr=True), transient=True,
        )
        progress.start()
        task = progress.add_task("ingest", total=total)
    notes = []

    texts: dict = {}  # (file, line) -> the frame text of a line whose trailer is wrong, for its row

    def batches(path, items):
        if items is not None:
            texts.update(((file, line), text) for _fid, text, file, line in items)
            for start in range(0, len(items), BATCH):
                verdicts = receiver.ingest_many(items[start : start + BATCH], source="cli")
                yield verdicts
                hold_after_commit(path.name, start + len(verdicts))
            return
        result = deliver_until_done(path, "cli", receiver, ctx.home, config)
        if result.status == "rejected":
            notes.append((_("%(file)s: rejected (%(reason)s), moved to %(path)s"),
                          {"file": result.name, "reason": result.reason, "path": result.archived}))
        elif result.status == "done":
            notes.append((_("%(file)s: moved to %(path)s"), {"file": result.name, "path": result.archived}))
        else:
            notes.append(("%(file)s: %(status)s (%(reason)s)",
                          {"file": result.name, "status": result.status, "reason": result.reason}))
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
                        rows.append(v)
                        shown += 1
                if progress is not None:
                    progress.advance(task, len(verdicts))
    except KeyboardInterrupt:
        if progress is not None:
            progress.stop()
            progress = None
        frames = ngettext("%(n)s frame", "%(n)s frames", committed, n=number(committed))
        print(_("ussd-console: interrupted; %(frames)s committed before the stop (of %(total)s); re-running the same "
                "command is safe: what is in comes back as duplicates, nothing is applied twice", frames=frames,
                total=number(total)) if total else
              _("ussd-console: interrupted; %(frames)s committed before the stop; re-running the same command is "
                "safe: what is in comes back as duplicates, nothing is applied twice", frames=frames), file=sys.stderr)
        return 130
    finally:
        if progress is not None:
            progress.stop()
    if not ctx.json:
        if rows:
            _texts_of_bad_trailers(receiver, rows, texts)
            file, line, frame_id = _("file"), _("line"), _("frame_id")
            out.print(table(_("Verdicts"), [file, line, frame_id, _("outcome"), _("reason")],
                            [(os.path.basename(v.file or ""), v.line, v.frame_id, outcome_words(v.outcome.value),
                              _why(v, texts)) for v in rows],
                            codes=(file, line, frame_id)))
        if sum(tally.values()) > shown and per_frame:
            more = sum(tally.values()) - shown
            out.print(Text(ngettext("... and %(n)s more (--json prints every verdict)",
                                    "... and %(n)s more (--json prints every verdict)", more, n=number(more))))
        t = receiver.totals()
        for template, parts in notes:
            out.print(assembled(template, **{k: safe(v, 400) for k, v in parts.items()}))
        out.print(summary_table(tally))
        out.print(Text(_("ledger: %(cases)s, %(people)s; %(conflicts)s",
                         cases=ngettext("%(n)s case", "%(n)s cases", t.cases, n=number(t.cases)),
                         people=ngettext("%(n)s person", "%(n)s people", t.headcount_total, n=number(t.headcount_total)),
                         conflicts=ngettext("%(n)s conflict open", "%(n)s conflicts open", t.conflicts_open,
                                            n=number(t.conflicts_open)))))
    return 0


def _texts_of_bad_trailers(receiver, verdicts, texts: dict) -> None:
    """The lines of an inbox file were read by its delivery, not here: a wrong trailer's line is
    the reject row the store just wrote (the newest rows, matched by file and line)."""
    missing = {(v.file, v.line) for v in verdicts if v.reason == "bad_trailer" and (v.file, v.line) not in texts}
    if missing:
        for row in receiver.rejects(limit=len(missing)):
            if (row.file, row.line) in missing:
                texts.setdefault((row.file, row.line), row.frame_text)


def _why(verdict, texts: dict) -> str:
    """The reason in words; a wrong trailer also says what it should be, as the Rejects table does."""
    text = texts.get((verdict.file, verdict.line))
    if verdict.reason == "bad_trailer" and isinstance(text, str):
        return explain_reject(verdict.frame_id, text, verdict.reason)
    return reason_words(verdict.reason)


OUTCOME_ORDER = ["APPLIED", "DUPLICATE", "CONFLICT_QUARANTINED", "REJECT_BAD_FORMAT", "REJECT_BAD_CRC"]


def summary_table(tally: Counter):
    """Frames by outcome and reason, in plain words (the codes are in --json)."""
    total = sum(tally.values())
    rows = [(outcome_words(o), reason_words(r), Text(number(n))) for (o, r), n in
            sorted(tally.items(), key=lambda kv: (OUTCOME_ORDER.index(kv[0][0])
                                                  if kv[0][0] in OUTCOME_ORDER else 99, -kv[1]))]
    frames = _("frames")
    return table(ngettext("%(n)s frame", "%(n)s frames", total, n=number(total)) if total else _("no frames"),
                 [_("outcome"), _("reason"), frames], rows, codes=(frames,))
