"""Delivering one inbox file: claim, read, ingest with its progress, archive or reject.

``deliver`` is the one function every path calls for a file in the inbox
(``watch``, ``sweep``, ``cli``: ``ingest`` of a file elsewhere reads it in
place and does not come here). It claims the file (``files``), and a
``Delivery`` takes the claimed file through one pass: it reads it, hands its frames to
``Receiver.ingest_many`` in batches whose transactions also commit the file's
progress row (R8: a crash resumes where the last commit stopped, nothing
counted twice), then archives it to ``processed/YYYY-MM-DD/`` without
phone-number columns, or moves an unreadable one to ``rejected/`` with a
reason file. A gateway's spooled posts (``core.store.spooled.SpoolFile``) are taken
in as that gateway's path, with its message keys and counts in the same transactions.

A file whose writer may still be appending is read only up to its last
complete line and stays claimed ("held"): the writer's open descriptor follows
the renamed inode, and the file is archived (its claimed name unlinked) only
once nothing more can arrive in it: no process holds it open for writing
(``writers``) and it has been quiet for ``settle_time``. Where the platform
cannot tell who holds it open, quiet time alone decides, ``QUIET_FACTOR``
times the settle time.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from core.clock import SYSTEM, Clock
from core.config import InboxConfig
from core.home import Home, quiet_skip
from core.i18n import N_
from core.rules.batch import Verdict
from core.rules.formats import FormatError, complete_part, line_count, read_items, spreadsheet_kind, table_items
from core.rules.privacy import mask_phones
from core.rules.words import outcome_counts
from core.rules.scrub import scrub, scrub_table
from core.store.commit_hold import hold_after_commit
from core.store.inbox_progress import (
    ClaimTaken,
    advance_progress,
    create_progress,
    finish_progress,
    progress,
)
from core.store.receiver import Receiver
from core.store.spooled import SpoolFile

from .claim import Claim
from .files import (
    archive,
    changed_since,
    claim_name,
    claimed_dir,
    drop_stages,
    home_relative,
    InboxPathError,
    inside_home,
    kind_skip,
    lock_claim,
    masked_name,
    release_claim,
    reserve_claim,
    same_file,
    split_claim,
)
from .rejecting import claim_key, reject, vanished
from .result import FileResult
from .spreadsheets import sheet_rows
from .writers import open_for_writing

log = logging.getLogger("ussd.inbox")

QUIET_FACTOR = 10  # settle times of quiet before a file is archived where writers cannot be seen




def deliver(
    path: str | os.PathLike,
    source: str,
    receiver: Receiver,
    home: Home,
    config: InboxConfig | None = None,
    stop: threading.Event | None = None,
    clock: Clock = SYSTEM,
) -> FileResult:
    """Claim, read, ingest and archive one inbox file; every path taking a file from the inbox calls this.

    ``path`` is a file in the inbox (it is claimed first) or in the claimed
    folder (its committed progress is resumed). ``stop`` set between batches
    leaves the file claimed, to be resumed later. ``clock`` says how long ago the file last
    changed (the inbox service's, which a test moves on).
    """
    config = config or InboxConfig()
    path = Path(path)
    inbox = inside_home(home, home.inbox)
    claimed = claimed_dir(home)
    parent = path.parent.resolve()
    name = path.name
    if parent == inbox:
        quiet = quiet_skip(name)
        if quiet:
            return FileResult(masked_name(name), source, "skipped", reason=quiet)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            log.info("claim lost by %s: %s is already gone (another path took it)", source, masked_name(name))
            return FileResult(masked_name(name), source, "lost", reason="gone")
        reason = kind_skip(st)
        if reason:
            return FileResult(masked_name(name), source, "skipped", reason=reason)
        # An unreadable file (permission denied) raises here, before the claim, so it stays where it is.
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)))
        except FileNotFoundError:
            log.info("claim lost by %s: %s is already gone (another path took it)", source, masked_name(name))
            return FileResult(masked_name(name), source, "lost", reason="gone")
        claimed.mkdir(exist_ok=True)
        inside_home(home, claimed)
        target = claimed / claim_name(source, name, home)
        reserve_claim(target)  # before the rename, so no sweep of the claimed folder can start on it
        try:
            try:
                os.rename(path, target)
            except FileNotFoundError:
                log.info("claim lost by %s: %s was taken by another path", source, masked_name(name))
                return FileResult(masked_name(name), source, "lost", reason="taken")
            log.info("claim won by %s: %s", source, masked_name(name))
            result = Delivery(target, source, receiver, home, config, stop, clock).run()
        finally:
            release_claim(target)
        result.claimed_now = True
        return result
    if parent == inside_home(home, claimed):
        if not reserve_claim(path):
            return FileResult(masked_name(split_claim(name)[1]), source, "skipped", reason="being read")
        try:
            return Delivery(path, source, receiver, home, config, stop, clock).run()
        finally:
            release_claim(path)
    raise InboxPathError(N_("%(path)s is not in the inbox %(inbox)s"), path=path, inbox=inbox)


def deliver_until_done(path, source, receiver, home, config=None) -> FileResult:
    """``deliver``, then wait for a held file to settle and finish it (for one-shot commands)."""
    config = config or InboxConfig()
    result = first = deliver(path, source, receiver, home, config)
    verdicts = list(result.verdicts)
    outcomes = Counter(result.outcomes)
    frames = result.frames
    while result.status == "held":
        time.sleep(max(0.05, min(1.0, (result.due or 0) - time.time())))
        result = deliver(result.claimed, source, receiver, home, config)
        verdicts.extend(result.verdicts)
        outcomes.update(result.outcomes)
        frames += result.frames
    result.verdicts, result.outcomes, result.frames = verdicts, dict(outcomes), frames
    result.claimed_now = first.claimed_now
    return result


class _Read(NamedTuple):
    """What this pass read of the file: its frames with their lines, and how far the file goes."""

    items: list  # (frame_id, text, line) of every line read
    format: str
    part: bytes  # the bytes read up to the last complete line (all of a spreadsheet)
    total: int  # lines (or rows) that part holds
    rows: list | None  # a spreadsheet's rows, to archive as a CSV
    whole: bool  # a spreadsheet: read whole at once, its rows are no byte ranges


class Delivery:
    """One pass by one path over one claimed file, and what its steps share.

    ``run`` opens and locks the file, finishes what a crash left, reads it,
    ingests the lines not yet committed and archives it (or holds it while its
    writer is still at it, or rejects it). The progress row read under the lock
    and the verdicts of this pass are kept here for the steps after.
    """

    def __init__(self, claim_path: Path, resumer: str, receiver: Receiver, home: Home, config: InboxConfig,
                 stop: threading.Event | None = None, clock: Clock = SYSTEM):
        self.claim = Claim.of(claim_path, resumer)
        self.clock = clock
        self.receiver = receiver
        self.home = home
        self.config = config
        self.stop = stop
        self.key = ""  # the file's row in the progress table, once locked
        self.row: dict | None = None  # that row as the pass found it
        self.verdicts: list[Verdict] = []
        self.spooled: SpoolFile | None = None  # a gateway's spooled posts: taken in as that gateway's

    def run(self) -> FileResult:
        c = self.claim
        try:
            fd = os.open(c.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return vanished(c, self.receiver)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return reject(c, "symlink", self.receiver, self.home, self.config)
            raise
        try:
            st = os.fstat(fd)
            if not lock_claim(fd):
                log.debug("%s is being read by another worker; left to it", c.label)
                return FileResult(c.label, c.source, "skipped", reason="being read", claimed=c.path)
            if not same_file(c.path, st):
                return vanished(c, self.receiver)
            return self._locked(fd, st)
        finally:
            os.close(fd)  # releases the lock, after the claim is archived and removed

    def _locked(self, fd: int, st: os.stat_result) -> FileResult:
        """The claimed, locked file: finish what a crash left, check and read it, ingest the lines
        not yet committed, then archive it (or hold it while its writer is still at it)."""
        m, config = self.receiver.m, self.config
        self.key = claim_key(m, self.claim.path.name)
        row = self.row = progress(m, self.key)
        self.claim = c = self.claim._replace(source=(row or {}).get("source") or self.claim.source)
        if row and row["state"] in ("rejected", "done", "vanished"):
            return self._finish_earlier_pass()
        data = _read_checked(fd, st, config)
        if isinstance(data, str):
            return reject(c, data, self.receiver, self.home, config)
        fresh = _may_grow(fd, c.path, st, data, config, self.clock.time())
        self.spooled = SpoolFile.of(self.receiver.db, c.inbox_name, data)
        try:
            read = self._read_items(data, fresh)
        except FormatError as exc:
            return reject(c, str(exc), self.receiver, self.home, config, data)
        if row and len(read.part) < row["offset"] and not fresh:
            log.warning("%s is shorter (%d bytes) than what was already read (%d); reading on from line %d",
                        c.label, len(read.part), row["offset"], row["line"])
        stopped = self._ingest_new_lines(read)
        if isinstance(stopped, FileResult):
            return stopped
        line_at = stopped
        if fresh or changed_since(c.path, st):
            log.debug("%s read to line %d and held until nothing more can arrive", c.label, line_at)
            return self._result("held", format=read.format, line=line_at,
                                due=max(st.st_mtime, self.clock.time()) + config.settle_time)
        return self._archive_done(data, read, line_at)

    def _read_items(self, data: bytes, fresh: bool) -> _Read:
        """The frames of what is whole in ``data`` (a ``FormatError`` if nothing in it can be read)."""
        inbox_name, row = self.claim.inbox_name, self.row
        sheet = spreadsheet_kind(inbox_name)
        rows = None
        if sheet and fresh:
            items, fmt, part, total = [], sheet, b"", row["line"] if row else 0  # a zip is whole only when done
        elif sheet:
            rows = sheet_rows(data, self.config.max_file_bytes)
            items, fmt, part, total = table_items(rows, self.config.columns), sheet, data, len(rows)
        else:
            part = complete_part(data) if fresh else data
            items, fmt = read_items(inbox_name, part, self.config.columns)
            total = line_count(part)
        return _Read(items, fmt, part, total, rows, sheet is not None)

    def _result(self, status: str, **fields) -> FileResult:
        """This pass's result: the claim's names and the verdicts so far, with ``fields``."""
        c = self.claim
        return FileResult(c.label, c.source, status, claimed=c.path, frames=len(self.verdicts),
                          verdicts=self.verdicts, outcomes=_tally(self.verdicts), **fields)

    def _finish_earlier_pass(self) -> FileResult:
        """A row already final: a crash came after the commit, so only the moves are left to finish."""
        c, row = self.claim, self.row
        if row["state"] == "rejected":
            return reject(c, row["reason"] or "rejected", self.receiver, self.home, self.config)
        if row["state"] == "vanished":  # it came back under its claimed name: ended already, so left alone
            return FileResult(c.label, c.source, "skipped", reason="ended as vanished", claimed=c.path)
        drop_stages(self.home, c.path.name)
        try:
            os.unlink(c.path)
        except FileNotFoundError:
            pass
        return FileResult(c.label, c.source, "done", line=row["line"], format=row["format"], claimed=c.path)

    def _ingest_new_lines(self, read: _Read) -> int | FileResult:
        """Ingest the lines after the committed ones, in batches that each commit the file's progress
        with their frames (R8). Returns the line reached, or the result when the pass ends early
        (another worker committed first, or a stop between batches)."""
        c, row, m, key, stop = self.claim, self.row, self.receiver.m, self.key, self.stop
        fmt, part = read.format, read.part
        done_line = row["line"] if row else 0
        done_offset = row["offset"] if row else 0
        fresh_items = [(fid, text, c.label, line) for fid, text, line in read.items if line > done_line]
        batch = self.config.batch_lines
        # An empty batch still commits: the file's row (and its path's count) or lines with no frames.
        chunks = [fresh_items[i : i + batch] for i in range(0, len(fresh_items), batch)] or [[]]
        line_at, offset_at, row_exists = done_line, done_offset, row is not None
        spooled = self.spooled
        source = c.source if spooled is None else spooled.source
        for k, chunk in enumerate(chunks):
            last = k == len(chunks) - 1
            upto = max(read.total, line_at) if last else chunks[k + 1][0][3] - 1
            # A spreadsheet is read whole at once (its rows are not byte ranges): every commit covers all of it.
            upto_offset = len(part) if last or read.whole else _offset_after(part, offset_at, upto - line_at)
            if row_exists and upto == line_at:
                continue  # nothing new to commit
            offered, also = chunk, None
            if spooled is not None:  # less the messages already taken in; their keys and counts with the frames
                offered, also = spooled.take(self.receiver.db, chunk, line_at, upto, self.clock.time())

            def within(chunk=chunk, upto=upto, upto_offset=upto_offset, first=not row_exists, expect=line_at,
                       also=also):
                stamp = self.clock.time()
                if first:
                    create_progress(m, key, c.label, c.source, fmt, "claimed", upto, upto_offset, len(chunk), stamp)
                else:
                    advance_progress(m, key, expect, upto, upto_offset, len(chunk), fmt, stamp)
                if also is not None:
                    also()

            try:
                self.verdicts.extend(self.receiver.ingest_many(offered, source=source, within=within))
            except ClaimTaken:
                log.info("claim lost by %s: %s was being read by another worker", c.resumer, c.label)
                return self._result("lost", reason="progress committed elsewhere")
            line_at, offset_at, row_exists = upto, upto_offset, True
            hold_after_commit(c.path.name, line_at, stop)
            if stop is not None and stop.is_set() and not last:
                log.info("%s left claimed at line %d to resume after the stop", c.label, line_at)
                return self._result("held", format=fmt, line=line_at, due=self.clock.time())
        return line_at

    def _archive_done(self, data: bytes, read: _Read, line_at: int) -> FileResult:
        """Read to the end and nothing more can arrive: archive it (without phone numbers unless asked),
        mark it done. A spreadsheet is archived as the CSV of its first sheet."""
        c, row, m, home = self.claim, self.row, self.receiver.m, self.home
        if self.config.keep_originals:
            copy, name = data, c.inbox_name
        elif read.rows is not None:
            copy, name = scrub_table(read.rows, self.config.columns), c.inbox_name.rsplit(".", 1)[0] + ".csv"
        else:
            copy, name = scrub(c.inbox_name, data, read.format, self.config.columns), c.inbox_name
        archived = archive(home, c.path.name, mask_phones(name), copy)
        if not finish_progress(m, self.key, "done", home_relative(home, archived), None, self.clock.time()):
            winner = (progress(m, self.key) or {}).get("archived_as")
            if winner != home_relative(home, archived):
                os.unlink(archived)  # our copy only; the worker that finished first archived its own
            drop_stages(home, c.path.name)
            log.info("claim lost by %s: %s was finished by another worker", c.resumer, c.label)
            return self._result("lost", reason="finished elsewhere")
        drop_stages(home, c.path.name)
        try:
            os.unlink(c.path)
        except FileNotFoundError:
            pass
        outcomes = _tally(self.verdicts)
        log.info("file %s done by %s: %d frames in %d lines (this pass: %s), moved to %s", c.label, c.source,
                 (row["frames"] if row else 0) + len(self.verdicts), line_at, outcome_counts(outcomes),
                 home_relative(home, archived))
        return self._result("done", format=read.format, line=line_at, archived=archived)


def _may_grow(fd: int, claim_path: Path, st: os.stat_result, data: bytes, config: InboxConfig, now: float) -> bool:
    """Whether more can still arrive in the file: it changed lately, or a writer still holds it open."""
    age = now - st.st_mtime
    if age < config.settle_time or len(data) != st.st_size:
        return True
    writing = open_for_writing(fd, str(claim_path))
    if writing is None:  # the platform cannot tell: quiet time alone decides
        return age < QUIET_FACTOR * config.settle_time
    return writing


def _read_checked(fd: int, st: os.stat_result, config: InboxConfig) -> bytes | str:
    """The file's bytes, or why it is rejected unread (not a regular file, over the size limit)."""
    why = kind_skip(st)
    if why:
        return why
    if st.st_size > config.max_file_bytes:
        return f"over the size limit ({st.st_size} > {config.max_file_bytes} bytes)"
    with open(fd, "rb", closefd=False) as fh:
        data = fh.read(config.max_file_bytes + 1)
    if len(data) > config.max_file_bytes:
        return f"over the size limit (more than {config.max_file_bytes} bytes)"
    return data


def _tally(verdicts: list[Verdict]) -> dict[str, int]:
    return dict(Counter(v.outcome.value for v in verdicts))


def _offset_after(data: bytes, offset: int, lines: int) -> int:
    for _ in range(lines):
        nl = data.find(b"\n", offset)
        if nl < 0:
            return len(data)
        offset = nl + 1
    return offset
