"""Delivering one inbox file: claim, read, ingest with its progress, archive or reject.

``deliver`` is the one function every path calls (``watch``, ``sweep``,
``cli``). It claims the file (``files``), reads it, hands its frames to
``Receiver.ingest_many`` in batches whose transactions also commit the file's
progress row (R8: a crash resumes where the last commit stopped, nothing
counted twice), then archives it to ``processed/YYYY-MM-DD/`` without
phone-number columns, or moves an unreadable one to ``rejected/`` with a
reason file.

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
import itertools
import logging
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from core.config import InboxConfig
from core.home import Home
from core.rules.batch import Verdict
from core.rules.formats import FormatError, complete_part, line_count, read_items, spreadsheet_kind, table_items
from core.rules.privacy import mask_phones
from core.rules.scrub import scrub, scrub_table
from core.store.inbox_progress import (
    ClaimTaken,
    advance_progress,
    create_progress,
    finish_progress,
    progress,
)
from core.store.receiver import Receiver

from .files import (
    _label,
    _archive,
    _changed,
    _claim_name,
    _drop_stages,
    _inside,
    _lock,
    _relative,
    _release_claim,
    _reserve_claim,
    _same_file,
    _split_claim,
    claimed_dir,
    kind_skip,
    quiet_skip,
)
from .rejecting import _claim_key, _reject, _vanished
from .spreadsheets import sheet_rows
from .writers import open_for_writing

log = logging.getLogger("ussd.inbox")

HOLD_ENV = "USSD_HOLD_AFTER_COMMIT"  # see hold_after_commit
_hold_counter = itertools.count()
QUIET_FACTOR = 10  # settle times of quiet before a file is archived where writers cannot be seen




@dataclass
class FileResult:
    """What one ``deliver`` call did with one file."""

    name: str  # the file's name in the inbox, escaped for display
    source: str  # the path that carried the file (the claim's winner)
    status: str  # done, held, rejected, lost, skipped; "error" from InboxService when delivery failed
    reason: str | None = None
    format: str | None = None
    frames: int = 0  # frames ingested by this call
    line: int = 0  # lines of the file committed so far
    claimed_now: bool = False  # this call won the claim (a resume did not)
    claimed: Path | None = None
    archived: Path | None = None
    due: float | None = None  # held: when the file will have settled
    outcomes: dict = field(default_factory=dict)
    verdicts: list = field(default_factory=list)

    @property
    def won(self) -> bool:
        return self.status in ("done", "held", "rejected")


def deliver(
    path: str | os.PathLike,
    source: str,
    receiver: Receiver,
    home: Home,
    config: InboxConfig | None = None,
    stop: threading.Event | None = None,
) -> FileResult:
    """Claim, read, ingest and archive one inbox file; every delivery path calls this.

    ``path`` is a file in the inbox (it is claimed first) or in the claimed
    folder (its committed progress is resumed). ``stop`` set between batches
    leaves the file claimed, to be resumed later.
    """
    config = config or InboxConfig()
    path = Path(path)
    inbox = _inside(home, home.inbox)
    claimed = claimed_dir(home)
    parent = path.parent.resolve()
    name = path.name
    if parent == inbox:
        quiet = quiet_skip(name)
        if quiet:
            return FileResult(_label(name), source, "skipped", reason=quiet)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            log.info("claim lost by %s: %s is already gone (another path took it)", source, _label(name))
            return FileResult(_label(name), source, "lost", reason="gone")
        reason = kind_skip(st)
        if reason:
            return FileResult(_label(name), source, "skipped", reason=reason)
        # An unreadable file (permission denied) raises here, before the claim, so it stays where it is.
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)))
        except FileNotFoundError:
            log.info("claim lost by %s: %s is already gone (another path took it)", source, _label(name))
            return FileResult(_label(name), source, "lost", reason="gone")
        claimed.mkdir(exist_ok=True)
        _inside(home, claimed)
        target = claimed / _claim_name(source, name, home)
        _reserve_claim(target)  # before the rename, so no sweep of the claimed folder can start on it
        try:
            try:
                os.rename(path, target)
            except FileNotFoundError:
                log.info("claim lost by %s: %s was taken by another path", source, _label(name))
                return FileResult(_label(name), source, "lost", reason="taken")
            log.info("claim won by %s: %s", source, _label(name))
            result = _process(target, source, receiver, home, config, stop)
        finally:
            _release_claim(target)
        result.claimed_now = True
        return result
    if parent == _inside(home, claimed):
        if not _reserve_claim(path):
            return FileResult(_label(_split_claim(name)[1]), source, "skipped", reason="being read")
        try:
            return _process(path, source, receiver, home, config, stop)
        finally:
            _release_claim(path)
    raise ValueError(f"{path} is not in the inbox {inbox}")


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


def _process(claim_path: Path, resumer: str, receiver: Receiver, home: Home, config: InboxConfig,
             stop: threading.Event | None) -> FileResult:
    claim = claim_path.name
    named_source, inbox_name = _split_claim(claim)
    label = _label(inbox_name)
    try:
        fd = os.open(claim_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return _vanished(claim_path, resumer, named_source or resumer, label, receiver)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return _reject(claim_path, "symlink", named_source or resumer, label, inbox_name, receiver, home, config)
        raise
    try:
        st = os.fstat(fd)
        if not _lock(fd):
            log.debug("%s is being read by another worker; left to it", label)
            return FileResult(label, named_source or resumer, "skipped", reason="being read", claimed=claim_path)
        if not _same_file(claim_path, st):
            return _vanished(claim_path, resumer, named_source or resumer, label, receiver)
        return _process_locked(fd, st, claim_path, resumer, receiver, home, config, stop)
    finally:
        os.close(fd)  # releases the lock, after the claim is archived and removed


class _Claim(NamedTuple):
    """One claimed file as the delivery steps see it."""

    path: Path
    key: str  # its row in the progress table
    inbox_name: str
    label: str  # the inbox name, escaped for logs and the store
    source: str  # the path that won the claim (or resumes it)
    resumer: str  # the path doing this pass


def _process_locked(fd: int, st: os.stat_result, claim_path: Path, resumer: str, receiver: Receiver, home: Home,
                    config: InboxConfig, stop: threading.Event | None) -> FileResult:
    """The claimed, locked file: finish what a crash left, check and read it, ingest the lines
    not yet committed, then archive it (or hold it while its writer is still at it)."""
    m = receiver.m
    key = _claim_key(m, claim_path.name)
    named_source, inbox_name = _split_claim(claim_path.name)
    row = progress(m, key)
    source = (row or {}).get("source") or named_source or resumer
    c = _Claim(claim_path, key, inbox_name, _label(inbox_name), source, resumer)
    if row and row["state"] in ("rejected", "done", "vanished"):
        return _finish_earlier_pass(c, row, receiver, home, config)
    data = _read_checked(fd, st, config)
    if isinstance(data, str):
        return _reject(claim_path, data, source, c.label, inbox_name, receiver, home, config)
    fresh = _may_grow(fd, claim_path, st, data, config)
    sheet = spreadsheet_kind(inbox_name)
    rows = None
    try:
        if sheet and fresh:
            items, fmt, part, total = [], sheet, b"", row["line"] if row else 0  # a zip is whole only when done
        elif sheet:
            rows = sheet_rows(data, config.max_file_bytes)
            items, fmt, part, total = table_items(rows, config.columns), sheet, data, len(rows)
        else:
            part = complete_part(data) if fresh else data
            items, fmt = read_items(inbox_name, part, config.columns)
            total = line_count(part)
    except FormatError as exc:
        return _reject(claim_path, str(exc), source, c.label, inbox_name, receiver, home, config, data)
    if row and len(part) < row["offset"] and not fresh:
        log.warning("%s is shorter (%d bytes) than what was already read (%d); reading on from line %d",
                    c.label, len(part), row["offset"], row["line"])
    verdicts: list[Verdict] = []
    stopped = _ingest_new_lines(c, row, items, fmt, part, total, sheet is not None, receiver, config, stop,
                                verdicts)
    if isinstance(stopped, FileResult):
        return stopped
    line_at = stopped
    outcomes = _tally(verdicts)
    base = dict(name=c.label, source=source, claimed=claim_path)
    if fresh or _changed(claim_path, st):
        log.debug("%s read to line %d and held until nothing more can arrive", c.label, line_at)
        return FileResult(**base, status="held", format=fmt, frames=len(verdicts), line=line_at,
                          due=max(st.st_mtime, time.time()) + config.settle_time, verdicts=verdicts, outcomes=outcomes)
    return _archive_done(c, row, data, rows, fmt, line_at, verdicts, outcomes, receiver, home, config)


def _may_grow(fd: int, claim_path: Path, st: os.stat_result, data: bytes, config: InboxConfig) -> bool:
    """Whether more can still arrive in the file: it changed lately, or a writer still holds it open."""
    age = time.time() - st.st_mtime
    if age < config.settle_time or len(data) != st.st_size:
        return True
    writing = open_for_writing(fd, str(claim_path))
    if writing is None:  # the platform cannot tell: quiet time alone decides
        return age < QUIET_FACTOR * config.settle_time
    return writing


def _finish_earlier_pass(c: _Claim, row: dict, receiver: Receiver, home: Home, config: InboxConfig) -> FileResult:
    """A row already final: a crash came after the commit, so only the moves are left to finish."""
    if row["state"] == "rejected":
        return _reject(c.path, row["reason"] or "rejected", c.source, c.label, c.inbox_name, receiver, home, config)
    if row["state"] == "vanished":  # it came back under its claimed name: ended already, so left alone
        return FileResult(c.label, c.source, "skipped", reason="ended as vanished", claimed=c.path)
    _drop_stages(home, c.path.name)
    try:
        os.unlink(c.path)
    except FileNotFoundError:
        pass
    return FileResult(c.label, c.source, "done", line=row["line"], format=row["format"], claimed=c.path)


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


def _ingest_new_lines(c: _Claim, row: dict | None, items, fmt: str, part: bytes, total_lines: int, whole: bool,
                      receiver: Receiver, config: InboxConfig, stop: threading.Event | None,
                      verdicts: list) -> int | FileResult:
    """Ingest the lines after the committed ones, in batches that each commit the file's progress
    with their frames (R8). Returns the line reached, or the result when the pass ends early
    (another worker committed first, or a stop between batches)."""
    m = receiver.m
    done_line = row["line"] if row else 0
    done_offset = row["offset"] if row else 0
    fresh_items = [(fid, text, c.label, line) for fid, text, line in items if line > done_line]
    batch = config.batch_lines
    # An empty batch still commits: the file's row (and its path's count) or lines with no frames.
    chunks = [fresh_items[i : i + batch] for i in range(0, len(fresh_items), batch)] or [[]]
    line_at, offset_at, row_exists = done_line, done_offset, row is not None
    base = dict(name=c.label, source=c.source, claimed=c.path)
    for k, chunk in enumerate(chunks):
        last = k == len(chunks) - 1
        upto = max(total_lines, line_at) if last else chunks[k + 1][0][3] - 1
        # A spreadsheet is read whole at once (its rows are not byte ranges): every commit covers all of it.
        upto_offset = len(part) if last or whole else _offset_after(part, offset_at, upto - line_at)
        if row_exists and upto == line_at:
            continue  # nothing new to commit

        def within(chunk=chunk, upto=upto, upto_offset=upto_offset, first=not row_exists, expect=line_at):
            stamp = time.time()
            if first:
                create_progress(m, c.key, c.label, c.source, fmt, "claimed", upto, upto_offset, len(chunk), stamp)
            else:
                advance_progress(m, c.key, expect, upto, upto_offset, len(chunk), fmt, stamp)

        try:
            verdicts.extend(receiver.ingest_many(chunk, source=c.source, within=within))
        except ClaimTaken:
            log.info("claim lost by %s: %s was being read by another worker", c.resumer, c.label)
            return FileResult(**base, status="lost", reason="progress committed elsewhere", verdicts=verdicts,
                              frames=len(verdicts), outcomes=_tally(verdicts))
        line_at, offset_at, row_exists = upto, upto_offset, True
        hold_after_commit(c.path.name, line_at, stop)
        if stop is not None and stop.is_set() and not last:
            log.info("%s left claimed at line %d to resume after the stop", c.label, line_at)
            return FileResult(**base, status="held", format=fmt, frames=len(verdicts), line=line_at,
                              due=time.time(), verdicts=verdicts, outcomes=_tally(verdicts))
    return line_at


def hold_after_commit(claim: str, line: int, stop: threading.Event | None = None) -> None:
    """The ``HOLD_ENV`` hook; does nothing unless the variable is set.

    With ``USSD_HOLD_AFTER_COMMIT`` naming a folder, a worker leaves a marker there after each
    committed batch and waits while the marker exists (or until a stop), so a test or the crash
    harness can signal, kill or stop a real receiver at a known point of a file instead of
    guessing a moment. It lives here, not in tests/, because the receiver under test is a real
    ``ussd-console watch`` process (or ``ussd-console ingest``, which calls it after each batch).
    """
    folder = os.environ.get(HOLD_ENV)
    if not folder:
        return
    marker = Path(folder) / f"{os.getpid()}-{threading.get_ident()}-{next(_hold_counter)}.held"
    temporary = marker.with_suffix(".tmp")
    temporary.write_text(f"{claim}\n{line}\n")
    os.rename(temporary, marker)  # whole when seen
    while marker.exists() and not (stop is not None and stop.is_set()):
        time.sleep(0.005)


def _archive_done(c: _Claim, row: dict | None, data: bytes, rows, fmt: str, line_at: int, verdicts: list,
                  outcomes: dict, receiver: Receiver, home: Home, config: InboxConfig) -> FileResult:
    """Read to the end and nothing more can arrive: archive it (without phone numbers unless asked),
    mark it done. A spreadsheet is archived as the CSV of its first sheet."""
    m = receiver.m
    base = dict(name=c.label, source=c.source, claimed=c.path)
    if config.keep_originals:
        copy, name = data, c.inbox_name
    elif rows is not None:
        copy, name = scrub_table(rows, config.columns), c.inbox_name.rsplit(".", 1)[0] + ".csv"
    else:
        copy, name = scrub(c.inbox_name, data, fmt, config.columns), c.inbox_name
    archived = _archive(home, c.path.name, mask_phones(name), copy)
    if not finish_progress(m, c.key, "done", _relative(home, archived), None, time.time()):
        winner = (progress(m, c.key) or {}).get("archived_as")
        if winner != _relative(home, archived):
            os.unlink(archived)  # our copy only; the worker that finished first archived its own
        _drop_stages(home, c.path.name)
        log.info("claim lost by %s: %s was finished by another worker", c.resumer, c.label)
        return FileResult(**base, status="lost", reason="finished elsewhere", verdicts=verdicts,
                          frames=len(verdicts), outcomes=outcomes)
    _drop_stages(home, c.path.name)
    try:
        os.unlink(c.path)
    except FileNotFoundError:
        pass
    summary = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) or "none"
    log.info("file %s done by %s: %d frames in %d lines (this pass: %s), moved to %s", c.label, c.source,
             (row["frames"] if row else 0) + len(verdicts), line_at, summary, _relative(home, archived))
    return FileResult(**base, status="done", format=fmt, frames=len(verdicts), line=line_at, archived=archived,
                      verdicts=verdicts, outcomes=outcomes)


def _tally(verdicts: list[Verdict]) -> dict[str, int]:
    return dict(Counter(v.outcome.value for v in verdicts))


def _offset_after(data: bytes, offset: int, lines: int) -> int:
    for _ in range(lines):
        nl = data.find(b"\n", offset)
        if nl < 0:
            return len(data)
        offset = nl + 1
    return offset
