"""Inbox delivery: a watchdog push path and a sweep pull path through one merge point (SPEC §6).

``deliver`` is the one function every path calls (``watch``, ``sweep``, ``cli``).
It claims a file by renaming it into ``inbox/.claimed/`` (an atomic rename, so
when two paths reach one file exactly one wins and the other logs that it
lost), reads it, hands its frames to ``Receiver.ingest_many`` in batches whose
transactions also commit the file's progress (R8: a crash resumes where the
last commit stopped, nothing counted twice), then archives it to
``processed/YYYY-MM-DD/`` without phone-number columns, or moves an unreadable
one to ``rejected/`` with a reason file.

A file whose writer may still be appending (its mtime is younger than
``settle_time``) is read only up to its last complete line and stays claimed
("held") until it settles: the writer's open descriptor follows the renamed
inode, so nothing it writes later is lost.

While one worker reads and archives a claimed file it holds an ``flock`` on
it; the kernel drops it if the process dies, so a crashed worker's file is
taken over at once and two live ones never work on one file. The archive copy
is staged under a name derived from the claim, so a worker resuming after a
crash finds the copy it made instead of making a second one.

``InboxService`` runs the two paths: the observer's handler only queues paths
(an exception in a handler kills the observer thread), a worker thread drains
the queue, a monitor restarts a dead observer, worker or sweep thread, and the
sweep lists the inbox every ``sweep_interval`` as the safety net for events
that never came. A fault (the store full, read-only or locked, a file that
cannot be read, a dead thread) is logged once in one line and shown by
``health()`` until the thing works again; the file it concerns stays in the
inbox and every sweep tries it again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import hashlib
import itertools
import logging
import os
import queue
import re
import stat
import sqlite3
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import peewee

from .config import InboxConfig, load_inbox_config
from .formats import FormatError, complete_part, line_count, read_items, scrub
from .frame import escape_text
from .home import Home
from .receiver import Receiver, Verdict
from .store import write_transaction

log = logging.getLogger("ussd.inbox")

CLAIMED = ".claimed"
TEMP_SUFFIXES = (".tmp", ".part", ".partial")
NAME_MAX = 255
# How long a path the watch worker has queued is left to it before the sweep may take it.
OWN_GRACE = 30.0
MONITOR_EVERY = 0.5

_counter = itertools.count()
# Claimed files being read in this process: a second thread leaves them alone (other
# processes are kept apart by the progress row's compare-and-set instead).
_in_flight: set[str] = set()
_in_flight_lock = threading.Lock()
# A test hook: with this variable naming a folder, a worker leaves a marker there after each
# committed batch and waits while the marker exists (or until a stop), so a test can signal,
# kill or stop a receiver at a known point of a file instead of guessing a moment.
HOLD_ENV = "USSD_HOLD_AFTER_COMMIT"


class _ShutdownRaceFilter(logging.Filter):
    """Drop watchdog's error line for a read racing its own stop: harmless, and alarming in a log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


logging.getLogger("watchdog.observers.inotify").addFilter(_ShutdownRaceFilter())


_DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EIO})


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else exc.__class__.__name__


def _os_error(exc: OSError) -> str:
    """``strerror`` and the file's name, escaped: no traceback and no raw name in a log line."""
    what = exc.strerror or _one_line(exc)
    if exc.filename is not None:
        return f"{what}: {escape_text(os.path.basename(os.fsdecode(exc.filename)), 120)}"
    return what


def _is_store_error(exc: BaseException) -> bool:
    """An error from the database (SQLite or PostgreSQL, raw or wrapped by peewee)."""
    if isinstance(exc, (peewee.PeeweeException, sqlite3.Error)):
        return True
    return type(exc).__module__.split(".")[0] == "psycopg"


class _ClaimTaken(Exception):
    """Another worker committed this file's progress first; our transaction rolls back."""


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


# -- the layout ---------------------------------------------------------------------


def claimed_dir(home: Home) -> Path:
    return home.inbox / CLAIMED


def _inside(home: Home, path: Path) -> Path:
    """``path`` resolved; a ``ValueError`` if a symlink takes it outside the home."""
    root = home.root.resolve()
    real = path.resolve()
    if real != root and root not in real.parents:
        raise ValueError(f"{path} resolves to {real}, outside the home {root}; refusing to use it")
    return real


def prepare_home(home: Home) -> None:
    """Create the inbox folders; refuse any that a symlink points outside the home."""
    for folder in (home.inbox, claimed_dir(home), home.processed, home.rejected, home.logs):
        folder.mkdir(parents=True, exist_ok=True)
        _inside(home, folder)


def quiet_skip(name: str) -> str | None:
    """Names that are never read and not worth a log line: dotfiles and temp names."""
    if name.startswith("."):
        return "hidden name"
    if name.lower().endswith(TEMP_SUFFIXES):
        return "temporary name"
    return None


def kind_skip(st: os.stat_result) -> str | None:
    """Inodes that are never read (and are logged): anything but a regular file."""
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    if stat.S_ISDIR(mode):
        return "directory"
    return "not a regular file"


def _claim_name(source: str, name: str) -> str:
    token = f"{time.time_ns():x}-{os.getpid():x}-{next(_counter):x}"
    prefix = f"{token}.{source}~"
    room = NAME_MAX - len(os.fsencode(prefix))
    raw = os.fsencode(name)
    if len(raw) > room:
        name = os.fsdecode(raw[:room].decode("utf-8", "ignore").encode("utf-8"))
    return prefix + name


def _split_claim(claim: str) -> tuple[str | None, str]:
    """``(source, inbox name)`` from a claimed file's name."""
    prefix, tilde, name = claim.partition("~")
    if not tilde:
        return None, claim
    _token, _dot, source = prefix.partition(".")
    if not (source.isidentifier() and source.isascii() and len(source) <= 16):
        source = ""  # not a claim this program made (a file put into .claimed/ by hand)
    return (source or None), name


# -- the progress table (raw SQL: it runs inside the ingest transaction) ----------------


def _row(db, claim: str) -> dict | None:
    cur = db.execute_sql(
        "SELECT state, line, byte_offset, frames, source, name, format, archived_as, reason "
        f"FROM inbox_files WHERE claim = {db.param}",
        (claim,),
    )
    found = cur.fetchone()
    if found is None:
        return None
    keys = ("state", "line", "offset", "frames", "source", "name", "format", "archived_as", "reason")
    return dict(zip(keys, found))


def _create_row(db, claim, name, source, fmt, state, line, offset, frames, now, reason=None, archived=None):
    p = db.param
    try:
        db.execute_sql(
            "INSERT INTO inbox_files (claim, name, source, format, state, line, byte_offset, frames, claimed_at, "
            f"updated_at, finished_at, reason, archived_as) VALUES ({', '.join([p] * 13)})",
            (claim, name, source, fmt, state, line, offset, frames, now, now,
             now if state != "claimed" else None, reason, archived),
        )
    except Exception as exc:  # peewee.IntegrityError: the row exists, someone else got here first
        if "UNIQUE" in str(exc) or "constraint" in str(exc).lower():
            raise _ClaimTaken() from exc
        raise
    db.execute_sql(
        f"INSERT INTO inbox_path_files (source, files) VALUES ({p}, 1) "
        "ON CONFLICT (source) DO UPDATE SET files = inbox_path_files.files + 1",
        (source,),
    )


def _advance_row(db, claim, expect_line, line, offset, frames, fmt, now):
    p = db.param
    cur = db.execute_sql(
        f"UPDATE inbox_files SET line = {p}, byte_offset = {p}, frames = frames + {p}, format = COALESCE({p}, format), "
        f"updated_at = {p} WHERE claim = {p} AND line = {p} AND state = 'claimed'",
        (line, offset, frames, fmt, now, claim, expect_line),
    )
    if cur.rowcount != 1:
        raise _ClaimTaken()


def _finish_row(db, claim, state, archived, reason, now) -> bool:
    p = db.param
    with write_transaction(db):
        cur = db.execute_sql(
            f"UPDATE inbox_files SET state = {p}, archived_as = {p}, reason = {p}, finished_at = {p}, updated_at = {p} "
            f"WHERE claim = {p} AND state = 'claimed'",
            (state, archived, reason, now, now, claim),
        )
        return cur.rowcount == 1


def file_counts(receiver: Receiver) -> dict[str, int]:
    """Files per delivery path (``watch``, ``sweep``, ``cli``, ...), for the console and ``status``."""
    cur = receiver.db.execute_sql("SELECT source, files FROM inbox_path_files ORDER BY source")
    return {source: files for source, files in cur.fetchall()}


def recent_files(receiver: Receiver, limit: int = 50) -> list[dict]:
    """The newest claimed files with their state and progress, newest first."""
    keys = ("name", "source", "format", "state", "line", "frames", "claimed_at", "finished_at", "archived_as", "reason")
    cur = receiver.db.execute_sql(
        f"SELECT {', '.join(keys)} FROM inbox_files ORDER BY claimed_at DESC LIMIT {receiver.db.param}", (limit,)
    )
    return [dict(zip(keys, row)) for row in cur.fetchall()]


# -- moving files -------------------------------------------------------------------------


def _candidates(name: str):
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    yield name
    for n in itertools.count(2):
        yield f"{stem}-{n}.{ext}" if ext else f"{stem}-{n}"


def _link_unique(src: Path, folder: Path, name: str) -> Path:
    """Give ``src`` a new, unused name in ``folder`` (never overwriting); the link is atomic."""
    folder.mkdir(parents=True, exist_ok=True)
    for candidate in _candidates(name):
        target = folder / candidate
        if os.path.lexists(target) or os.path.lexists(str(target) + ".reason"):
            continue
        try:
            os.link(src, target, follow_symlinks=False)
            return target
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def _existing_link(st: os.stat_result, folder: Path, name: str) -> Path | None:
    """The name in ``folder`` that ``_link_unique`` gave this inode before a crash, if any.

    ``_link_unique`` takes the first free candidate name, so a link it made is
    among the names that are taken before the first free one.
    """
    for candidate in _candidates(name):
        target = folder / candidate
        try:
            found = os.lstat(target)
        except FileNotFoundError:
            if os.path.lexists(str(target) + ".reason"):
                continue
            return None
        if (found.st_dev, found.st_ino) == (st.st_dev, st.st_ino):
            return target
    raise AssertionError("unreachable")


def _link_in(src: Path, folder: Path, name: str) -> Path:
    """``src`` under a new name in ``folder``, by a link (``src`` stays) or, where links fail, a rename.

    A link (the caller unlinks ``src`` after) rather than a rename: a rename out
    of the watched tree is an unpaired move event, which watchdog holds back
    0.5 s, delaying every event behind it.
    """
    try:
        return _link_unique(src, folder, name)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP):
            raise
    for candidate in _candidates(name):
        target = folder / candidate
        if not os.path.lexists(target) and not os.path.lexists(str(target) + ".reason"):
            os.rename(src, target)
            return target
    raise AssertionError("unreachable")


_STAGE = ".arch-"


def _stage_prefix(claim: str) -> str:
    return _STAGE + hashlib.sha256(os.fsencode(claim)).hexdigest()[:24] + "-"


def _stages(home: Home, claim: str) -> list[Path]:
    prefix = _stage_prefix(claim)
    try:
        with os.scandir(claimed_dir(home)) as it:
            return [Path(e.path) for e in it if e.name.startswith(prefix) and e.name.endswith(".part")]
    except FileNotFoundError:
        return []


def _drop_stages(home: Home, claim: str) -> None:
    for stage in _stages(home, claim):
        try:
            os.unlink(stage)
        except FileNotFoundError:
            pass


def _archive(home: Home, claim: str, name: str, data: bytes) -> Path:
    """Put ``data`` into ``processed/YYYY-MM-DD/`` under ``name`` (or a free variant), once.

    The copy is written to a stage named after the claim (hidden, beside the
    claimed file, carrying its day), fsynced, then linked in under a free
    name, and the stage is removed only after the file's row says ``done``.
    A worker that resumes the claim after a crash finds a stage with a second
    link and takes that link as the archive, instead of making a second copy;
    a stage with one link is an unfinished write and is written again.
    """
    for stage in _stages(home, claim):
        st = os.lstat(stage)
        day = stage.name[len(_stage_prefix(claim)) : -len(".part")]
        if st.st_nlink > 1 and re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
            found = _existing_link(st, home.processed / day, name)
            if found is not None:
                return found
        os.unlink(stage)
    day = dt.date.fromtimestamp(time.time()).isoformat()
    folder = home.processed / day
    folder.mkdir(parents=True, exist_ok=True)
    _inside(home, folder)
    stage = claimed_dir(home) / f"{_stage_prefix(claim)}{day}.part"
    _write_synced(stage, data)
    try:
        return _link_unique(stage, folder, name)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP):
            raise
    # No link from the inbox to the archive (another filesystem): a stage in the day folder instead.
    # A crash between its link and the commit can then leave a second copy; nothing else changes.
    local = folder / f".{time.time_ns():x}-{os.getpid():x}-{next(_counter):x}.part"
    try:
        _write_synced(local, data)
        return _link_unique(local, folder, name)
    finally:
        try:
            os.unlink(local)
        except FileNotFoundError:
            pass


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "xb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _relative(home: Home, path: Path) -> str:
    """A path for the store and the log: under the home, escaped (the name came from outside)."""
    try:
        path = path.relative_to(home.root)
    except ValueError:
        pass
    return escape_text(str(path), 1000)


# Every character escapes to at most 10, and a name has at most 255: a key is never cut short.
_KEY_LIMIT = 10 * NAME_MAX + 10


def _claim_key(db, claim: str) -> str:
    """A claimed file's key in ``inbox_files``: its name, escaped (a name may carry anything).

    Stores written before keys were escaped used the raw name; a file claimed
    then and still in flight is found under that.
    """
    key = escape_text(claim, _KEY_LIMIT)
    if key != claim and _row(db, key) is None and _row(db, claim) is not None:
        return claim
    return key


# -- the one delivery function ----------------------------------------------------------


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
            return FileResult(escape_text(name, 120), source, "skipped", reason=quiet)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            log.info("claim lost by %s: %s is already gone (another path took it)", source, escape_text(name, 120))
            return FileResult(escape_text(name, 120), source, "lost", reason="gone")
        reason = kind_skip(st)
        if reason:
            return FileResult(escape_text(name, 120), source, "skipped", reason=reason)
        # An unreadable file (permission denied) raises here, before the claim, so it stays where it is.
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)))
        except FileNotFoundError:
            log.info("claim lost by %s: %s is already gone (another path took it)", source, escape_text(name, 120))
            return FileResult(escape_text(name, 120), source, "lost", reason="gone")
        claimed.mkdir(exist_ok=True)
        _inside(home, claimed)
        target = claimed / _claim_name(source, name)
        _reserve_claim(target)  # before the rename, so no sweep of the claimed folder can start on it
        try:
            try:
                os.rename(path, target)
            except FileNotFoundError:
                log.info("claim lost by %s: %s was taken by another path", source, escape_text(name, 120))
                return FileResult(escape_text(name, 120), source, "lost", reason="taken")
            log.info("claim won by %s: %s", source, escape_text(name, 120))
            result = _process(target, source, receiver, home, config, stop)
        finally:
            _release_claim(target)
        result.claimed_now = True
        return result
    if parent == _inside(home, claimed):
        if not _reserve_claim(path):
            return FileResult(escape_text(_split_claim(name)[1], 120), source, "skipped", reason="being read")
        try:
            return _process(path, source, receiver, home, config, stop)
        finally:
            _release_claim(path)
    raise ValueError(f"{path} is not in the inbox {inbox}")


def _reserve_claim(path: Path) -> bool:
    with _in_flight_lock:
        if str(path) in _in_flight:
            return False
        _in_flight.add(str(path))
        return True


def _release_claim(path: Path) -> None:
    with _in_flight_lock:
        _in_flight.discard(str(path))


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


def _lock(fd: int) -> bool:
    """Hold a claimed file exclusively while one worker reads and archives it.

    The kernel drops the lock when its process dies, so after a crash the next
    worker takes the file over at once, while two live workers (threads or
    processes) never read or archive one claim at the same time. On a
    filesystem without locks the progress row's compare-and-set still keeps
    the ledger exact.
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in (errno.ENOLCK, errno.ENOTSUP, errno.ENOSYS, errno.EINVAL):
            return True
        raise


def _same_file(path: Path, st: os.stat_result) -> bool:
    try:
        now = os.lstat(path)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def _process(claim_path: Path, resumer: str, receiver: Receiver, home: Home, config: InboxConfig,
             stop: threading.Event | None) -> FileResult:
    claim = claim_path.name
    named_source, inbox_name = _split_claim(claim)
    label = escape_text(inbox_name, 120)
    try:
        fd = os.open(claim_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        log.info("claim lost by %s: %s was finished by another worker", resumer, label)
        return FileResult(label, named_source or resumer, "lost", reason="gone", claimed=claim_path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return _reject(claim_path, "symlink", named_source or resumer, label, inbox_name, receiver, home)
        raise
    try:
        st = os.fstat(fd)
        if not _lock(fd):
            log.debug("%s is being read by another worker; left to it", label)
            return FileResult(label, named_source or resumer, "skipped", reason="being read", claimed=claim_path)
        if not _same_file(claim_path, st):
            log.info("claim lost by %s: %s was finished by another worker", resumer, label)
            return FileResult(label, named_source or resumer, "lost", reason="gone", claimed=claim_path)
        return _process_locked(fd, st, claim_path, resumer, receiver, home, config, stop)
    finally:
        os.close(fd)  # releases the lock, after the claim is archived and removed


def _process_locked(fd: int, st: os.stat_result, claim_path: Path, resumer: str, receiver: Receiver, home: Home,
                    config: InboxConfig, stop: threading.Event | None) -> FileResult:
    db = receiver.db
    claim = claim_path.name
    key = _claim_key(db, claim)
    named_source, inbox_name = _split_claim(claim)
    row = _row(db, key)
    source = (row or {}).get("source") or named_source or resumer
    label = escape_text(inbox_name, 120)
    base = dict(name=label, source=source, claimed=claim_path)
    if row and row["state"] == "rejected":
        return _reject(claim_path, row["reason"] or "rejected", source, label, inbox_name, receiver, home)
    if row and row["state"] == "done":
        # A crash after the archive was committed: only the stage and the claimed copy are left to remove.
        _drop_stages(home, claim)
        try:
            os.unlink(claim_path)
        except FileNotFoundError:
            pass
        return FileResult(**base, status="done", line=row["line"], format=row["format"])
    why = kind_skip(st)
    if why:
        return _reject(claim_path, why, source, label, inbox_name, receiver, home)
    if st.st_size > config.max_file_bytes:
        return _reject(claim_path, f"over the size limit ({st.st_size} > {config.max_file_bytes} bytes)",
                       source, label, inbox_name, receiver, home)
    with open(fd, "rb", closefd=False) as fh:
        data = fh.read(config.max_file_bytes + 1)
    if len(data) > config.max_file_bytes:
        return _reject(claim_path, f"over the size limit (more than {config.max_file_bytes} bytes)",
                       source, label, inbox_name, receiver, home)
    now = time.time()
    fresh = now - st.st_mtime < config.settle_time or len(data) != st.st_size
    part = complete_part(data) if fresh else data
    try:
        items, fmt = read_items(inbox_name, part)
    except FormatError as exc:
        return _reject(claim_path, str(exc), source, label, inbox_name, receiver, home)
    done_line = row["line"] if row else 0
    done_offset = row["offset"] if row else 0
    if row and len(part) < done_offset and not fresh:
        log.warning("%s is shorter (%d bytes) than what was already read (%d); reading on from line %d",
                    label, len(part), done_offset, done_line)
    fresh_items = [(fid, text, label, line) for fid, text, line in items if line > done_line]
    total_lines = line_count(part)
    verdicts: list[Verdict] = []
    batch = config.batch_lines
    # An empty batch still commits: the file's row (and its path's count) or lines with no frames.
    chunks = [fresh_items[i : i + batch] for i in range(0, len(fresh_items), batch)] or [[]]
    line_at, offset_at, row_exists = done_line, done_offset, row is not None
    for k, chunk in enumerate(chunks):
        last = k == len(chunks) - 1
        upto = max(total_lines, line_at) if last else chunks[k + 1][0][3] - 1
        upto_offset = len(part) if last else _offset_after(part, offset_at, upto - line_at)
        if row_exists and upto == line_at:
            continue  # nothing new to commit

        def within(chunk=chunk, upto=upto, upto_offset=upto_offset, first=not row_exists, expect=line_at):
            stamp = time.time()
            if first:
                _create_row(db, key, label, source, fmt, "claimed", upto, upto_offset, len(chunk), stamp)
            else:
                _advance_row(db, key, expect, upto, upto_offset, len(chunk), fmt, stamp)

        try:
            verdicts.extend(receiver.ingest_many(chunk, source=source, within=within))
        except _ClaimTaken:
            log.info("claim lost by %s: %s was being read by another worker", resumer, label)
            return FileResult(**base, status="lost", reason="progress committed elsewhere", verdicts=verdicts,
                              frames=len(verdicts), outcomes=_tally(verdicts))
        line_at, offset_at, row_exists = upto, upto_offset, True
        _hold_after_commit(claim, line_at, stop)
        if stop is not None and stop.is_set() and not last:
            log.info("%s left claimed at line %d to resume after the stop", label, line_at)
            return FileResult(**base, status="held", format=fmt, frames=len(verdicts), line=line_at,
                              due=time.time(), verdicts=verdicts, outcomes=_tally(verdicts))
    outcomes = _tally(verdicts)
    if fresh or _changed(claim_path, st):
        log.debug("%s read to line %d and held until it settles", label, line_at)
        return FileResult(**base, status="held", format=fmt, frames=len(verdicts), line=line_at,
                          due=max(st.st_mtime, time.time()) + config.settle_time, verdicts=verdicts, outcomes=outcomes)
    # Settled and read to the end: archive it.
    archived = _archive(home, claim, inbox_name, data if config.keep_originals else scrub(inbox_name, data, fmt))
    if not _finish_row(db, key, "done", _relative(home, archived), None, time.time()):
        winner = (_row(db, key) or {}).get("archived_as")
        if winner != _relative(home, archived):
            os.unlink(archived)  # our copy only; the worker that finished first archived its own
        _drop_stages(home, claim)
        log.info("claim lost by %s: %s was finished by another worker", resumer, label)
        return FileResult(**base, status="lost", reason="finished elsewhere", verdicts=verdicts,
                          frames=len(verdicts), outcomes=outcomes)
    _drop_stages(home, claim)
    try:
        os.unlink(claim_path)
    except FileNotFoundError:
        pass
    summary = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) or "none"
    log.info("file %s done by %s: %d frames in %d lines (this pass: %s), moved to %s", label, source,
             (row["frames"] if row else 0) + len(verdicts), line_at, summary, _relative(home, archived))
    return FileResult(**base, status="done", format=fmt, frames=len(verdicts), line=line_at, archived=archived,
                      verdicts=verdicts, outcomes=outcomes)


def _hold_after_commit(claim: str, line: int, stop: threading.Event | None) -> None:
    """The ``HOLD_ENV`` test hook; does nothing unless the variable is set."""
    folder = os.environ.get(HOLD_ENV)
    if not folder:
        return
    marker = Path(folder) / f"{os.getpid()}-{threading.get_ident()}-{next(_counter)}.held"
    temporary = marker.with_suffix(".tmp")
    temporary.write_text(f"{claim}\n{line}\n")
    os.rename(temporary, marker)  # whole when seen
    while marker.exists() and not (stop is not None and stop.is_set()):
        time.sleep(0.005)


def _tally(verdicts: list[Verdict]) -> dict[str, int]:
    return dict(Counter(v.outcome.value for v in verdicts))


def _offset_after(data: bytes, offset: int, lines: int) -> int:
    for _ in range(lines):
        nl = data.find(b"\n", offset)
        if nl < 0:
            return len(data)
        offset = nl + 1
    return offset


def _changed(path: Path, before: os.stat_result) -> bool:
    """The file grew or was touched while it was being read: its writer is still at it."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (now.st_size, now.st_mtime_ns, now.st_ino) != (before.st_size, before.st_mtime_ns, before.st_ino)


def _reject(claim_path: Path, reason: str, source: str, label: str, inbox_name: str, receiver: Receiver,
            home: Home) -> FileResult:
    """Move a claimed file to ``rejected/`` unread (or partly read) with a ``.reason`` file beside it.

    The row says ``rejected`` first; then the file is linked into
    ``rejected/``, its reason written, and only then the claimed name removed.
    A worker resuming after a crash in between finds the link by its inode and
    finishes the same move, so a file is never rejected twice.
    """
    db = receiver.db
    key = _claim_key(db, claim_path.name)
    reason = escape_text(reason, 300)
    now = time.time()
    with write_transaction(db):
        current = _row(db, key)
        if current is None:
            _create_row(db, key, label, source, None, "rejected", 0, 0, 0, now, reason=reason)
        elif current["state"] == "claimed":
            _finish_row(db, key, "rejected", None, reason, now)
    rejected = home.rejected
    rejected.mkdir(parents=True, exist_ok=True)
    _inside(home, rejected)
    try:
        st = os.lstat(claim_path)
    except FileNotFoundError:
        return FileResult(label, source, "lost", reason="gone")
    moved = _existing_link(st, rejected, inbox_name) if st.st_nlink > 1 else None
    if moved is None:
        moved = _link_in(claim_path, rejected, inbox_name)
    note = (
        f"reason: {reason}\nfile: {label}\npath: {source}\n"
        f"rejected at: {dt.datetime.fromtimestamp(now).isoformat(timespec='seconds')}\n"
    )
    Path(str(moved) + ".reason").write_text(note, encoding="ascii")
    with write_transaction(db):
        db.execute_sql(f"UPDATE inbox_files SET archived_as = {db.param} WHERE claim = {db.param}",
                       (_relative(home, moved), key))
    try:
        os.unlink(claim_path)
    except FileNotFoundError:
        pass  # moved by a rename where links fail
    log.info("file %s rejected (%s), moved to %s", label, reason, _relative(home, moved))
    return FileResult(label, source, "rejected", reason=reason, claimed=claim_path, archived=moved)


# -- the service: push, pull, health ------------------------------------------------------


class _Handler:
    """Watchdog handler: turns events into queued paths and never raises."""

    def __init__(self, service: "InboxService"):
        self.service = service

    def dispatch(self, event) -> None:
        try:
            if event.is_directory:
                return
            if event.event_type == "moved":
                if event.dest_path:
                    self.service._offer(os.fsdecode(event.dest_path), moved=True)
            elif event.event_type in ("created", "modified", "closed"):
                self.service._offer(os.fsdecode(event.src_path), moved=False)
        except Exception as exc:  # noqa: BLE001 - a raise here would kill the observer thread
            log.error("inbox event handler failed on %s: %s", escape_text(repr(event), 300), _one_line(exc),
                      exc_info=True)


class InboxService:
    """The inbox's two delivery paths and their health; see the module docstring."""

    def __init__(self, home: Home, db_path: str | None = None, config: InboxConfig | None = None,
                 on_verdicts: Callable[[list, FileResult], None] | None = None):
        self.home = home
        self.config = config if config is not None else load_inbox_config(home.config)
        self.db_path = db_path or str(home.db)
        if self.db_path == ":memory:":
            # Each thread has its own connection, and each would get its own empty store.
            raise ValueError("the inbox service needs a store file, not ':memory:'")
        self.on_verdicts = on_verdicts
        self.receiver: Receiver | None = None
        self._queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._sweep_wake = threading.Event()
        self._lock = threading.Lock()
        self._sweep_lock = threading.Lock()
        self._owned: dict[str, float] = {}  # paths the watch worker has queued, waits for or holds
        self._waiting: dict[str, tuple[float, bool]] = {}  # worker only: path -> (due, is_claimed)
        self._stable: dict[str, tuple[tuple, float]] = {}  # path -> (stat key, first seen unchanged)
        self._logged_skips: dict[str, str] = {}
        self._logged_errors: dict[str, str] = {}
        self._claims_won: Counter = Counter()
        self._claims_lost = 0
        self._last_sweep: float | None = None
        # Faults in force: what -> (message, since, last seen). Each clears itself when the thing
        # it names works again; the newest one is kept after that for the console to show.
        self._faults: dict[str, tuple[str, float, float]] = {}
        self._last_fault: tuple[str, float] | None = None
        self._recovered_at: float | None = None
        self._observer_restarts = 0
        self._hooked: tuple[Callable, Callable] | None = None
        self._observer = None
        self._observer_state = "off"
        self._threads: dict[str, threading.Thread] = {}
        self._started = False
        self._inbox = str(home.inbox)
        self._claimed = str(claimed_dir(home))

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> "InboxService":
        prepare_home(self.home)
        self._inbox = str(_inside(self.home, self.home.inbox))
        self._claimed = str(_inside(self.home, claimed_dir(self.home)))
        self.receiver = Receiver(self.db_path)
        self._stop.clear()
        self._started = True
        self._hook_thread_deaths()
        if self.config.observer:
            self._start_observer()
        self._spawn("worker", self._worker_loop)
        self._spawn("sweep", self._sweep_loop)
        self._spawn("monitor", self._monitor_loop)
        log.info("inbox %s: observer %s, sweep %s every %gs, settle %gs", escape_text(self._inbox, 200),
                 "on" if self.config.observer else "off", "on" if self.config.sweep else "off",
                 self.config.sweep_interval, self.config.settle_time)
        return self

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop both paths; a file being read is left claimed at its last commit. True if all stopped."""
        deadline = time.monotonic() + timeout
        self._stop.set()
        self._sweep_wake.set()
        self._queue.put((None, "stop", 0.0))  # wakes the worker at once
        self._stop_observer(timeout)
        stopped = True
        for thread in list(self._threads.values()):
            thread.join(max(0.0, deadline - time.monotonic()))
            stopped = stopped and not thread.is_alive()
        self._threads.clear()
        self._started = False
        self._observer_state = "off"
        self._unhook_thread_deaths()
        if self.receiver is not None and stopped:
            self.receiver.close()
        return stopped

    def __enter__(self) -> "InboxService":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        def run():
            try:
                target()
            except Exception as exc:  # noqa: BLE001 - recorded for health(); the monitor restarts the thread
                self._fault(name, f"the inbox {name} thread stopped: {_one_line(exc)}; restarting it", exc_info=True)
            finally:
                try:
                    if self.receiver is not None:
                        self.receiver.db.close()  # this thread's connection
                except Exception:  # noqa: BLE001 - closing at exit; nothing left to protect
                    log.debug("closing the %s thread's connection failed", name, exc_info=True)

        thread = threading.Thread(target=run, name=f"inbox-{name}", daemon=True)
        self._threads[name] = thread
        thread.start()

    # -- the observer ----------------------------------------------------------------
    def _start_observer(self) -> None:
        from watchdog.events import FileClosedEvent, FileCreatedEvent, FileModifiedEvent, FileMovedEvent

        try:
            from watchdog.observers.inotify import InotifyObserver

            # Full events: a file renamed in from outside the inbox is a move, not a creation,
            # so it is known to be whole and taken at once.
            observer = InotifyObserver(generate_full_events=True)
        except (ImportError, OSError):
            from watchdog.observers import Observer

            observer = Observer()
        # Recursive, so the claim's rename into .claimed/ is a paired move and
        # watchdog does not hold the queue back waiting for its other half.
        observer.schedule(
            _Handler(self), self._inbox, recursive=True,
            event_filter=[FileCreatedEvent, FileMovedEvent, FileModifiedEvent, FileClosedEvent],
        )
        observer.daemon = True
        observer.start()
        self._observer = observer
        self._observer_state = "running"

    def _stop_observer(self, timeout: float = 5.0) -> None:
        observer, self._observer = self._observer, None
        if observer is None:
            return
        try:
            observer.stop()
            observer.join(timeout)
        except Exception:  # noqa: BLE001 - a dead observer may fail to stop; it is replaced anyway
            log.debug("stopping the observer failed", exc_info=True)

    def _observer_alive(self) -> bool:
        observer = self._observer
        if observer is None or not observer.is_alive():
            return False
        try:
            return all(e.is_alive() for e in observer.emitters)
        except Exception:  # noqa: BLE001
            return False

    def _hook_thread_deaths(self) -> None:
        """Turn the death of a watchdog thread into a fault line instead of a traceback on stderr."""
        previous = threading.excepthook

        def hook(args) -> None:
            thread = args.thread
            if (self._started and thread is not None and type(thread).__module__.startswith("watchdog")
                    and args.exc_type is not SystemExit):
                self._fault("observer", f"the inbox observer died: {_one_line(args.exc_value)}; restarting it",
                            exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
                return
            previous(args)

        threading.excepthook = hook
        self._hooked = (hook, previous)

    def _unhook_thread_deaths(self) -> None:
        if self._hooked is not None:
            hook, previous = self._hooked
            if threading.excepthook is hook:
                threading.excepthook = previous
            self._hooked = None

    def _monitor_loop(self) -> None:
        while not self._stop.wait(MONITOR_EVERY):
            try:
                self._check_threads()
                self._clear("monitor")
            except Exception as exc:  # noqa: BLE001 - the monitor itself must outlive what it watches
                self._fault("monitor", f"the inbox monitor failed: {_one_line(exc)}", exc_info=True)

    def _check_threads(self) -> None:
        """Restart a dead observer, worker or sweep thread; each death is a fault until then."""
        if self.config.observer and not self._observer_alive() and not self._stop.is_set():
            self._observer_state = "restarting"
            with self._lock:
                known = "observer" in self._faults
            if not known:
                self._fault("observer", "the inbox observer stopped; restarting it (the sweep covers the gap)")
            self._stop_observer(1.0)
            try:
                self._start_observer()
            except Exception as exc:  # noqa: BLE001 - e.g. inotify limits; retried on the next tick
                self._observer_state = "dead"
                self._fault("observer", f"the inbox observer cannot be restarted: {_one_line(exc)} "
                                        "(the sweep still delivers)")
            else:
                with self._lock:
                    self._observer_restarts += 1
                log.info("inbox observer restarted")
                self._clear("observer")
            self._sweep_wake.set()
        for name, loop in (("worker", self._worker_loop), ("sweep", self._sweep_loop)):
            thread = self._threads.get(name)
            if thread is None or thread.is_alive() or self._stop.is_set():
                continue
            if name == "sweep" and not self.config.sweep:
                continue  # with the sweep off, its thread ends after resuming claimed files at start
            self._spawn(name, loop)
            log.info("inbox %s thread restarted", name)
            self._clear(name)

    # -- the push path: handler -> queue -> worker -------------------------------------
    def _offer(self, path: str, moved: bool) -> None:
        if os.path.dirname(path) != self._inbox or quiet_skip(os.path.basename(path)):
            return
        with self._lock:
            self._owned.setdefault(path, time.monotonic())
        self._queue.put((path, "moved" if moved else "changed", 0.0))

    def _hand_over_held(self, path: str, due: float) -> None:
        """A claimed file still settling: the worker finishes it when it is due."""
        with self._lock:
            self._owned[path] = time.monotonic()
        self._queue.put((path, "held", due))

    def _release(self, path: str) -> None:
        with self._lock:
            self._owned.pop(path, None)

    def _owned_by_worker(self, path: str) -> bool:
        with self._lock:
            since = self._owned.get(path)
        return since is not None and time.monotonic() - since < max(OWN_GRACE, 10 * self.config.sweep_interval)

    def _worker_loop(self) -> None:
        while not self._stop.is_set():
            item = None
            try:
                item = self._queue.get(timeout=self._next_due_in())
            except queue.Empty:
                pass
            try:
                if item is not None and item[0] is not None:
                    path, kind, due = item
                    self._waiting.pop(path, None)
                    if kind == "held":
                        self._waiting[path] = (due, True)
                    else:
                        self._consider(path, moved=kind == "moved")
                self._run_due()
            except Exception as exc:  # noqa: BLE001 - the sweep takes over what this item was
                self._fault("worker", f"the inbox worker failed: {_one_line(exc)}", exc_info=True)

    def _next_due_in(self) -> float:
        if not self._waiting:
            return 0.5
        soonest = min(due for due, _claimed in self._waiting.values())
        return min(0.5, max(0.0, soonest - time.time()))

    def _consider(self, path: str, moved: bool) -> None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self._release(path)
            return
        why = kind_skip(st)
        if why:
            self._log_skip(path, why)
            self._release(path)
            return
        if moved or self._settled(path, st):
            self._release_after(path, self._deliver(path, "watch"))
        else:
            self._waiting[path] = (max(st.st_mtime + self.config.settle_time, time.time() + 0.05), False)

    def _release_after(self, path: str, result: FileResult) -> None:
        self._release(path)
        if result.status == "held" and result.claimed is not None:
            claimed = str(result.claimed)
            with self._lock:
                self._owned[claimed] = time.monotonic()
            self._waiting[claimed] = (result.due or time.time(), True)

    def _run_due(self) -> None:
        now = time.time()
        for path, (due, is_claimed) in list(self._waiting.items()):
            if due > now or self._stop.is_set():
                continue
            del self._waiting[path]
            if is_claimed:
                self._release_after(path, self._deliver(path, "watch"))
            else:
                self._consider(path, moved=False)

    # -- the pull path ------------------------------------------------------------------
    def _sweep_loop(self) -> None:
        self._sweep_once(resume_only=not self.config.sweep)  # held and crashed files first, at once
        if not self.config.sweep:
            return
        while not self._stop.is_set():
            self._sweep_wake.wait(self.config.sweep_interval)
            self._sweep_wake.clear()
            if self._stop.is_set():
                break
            try:
                self._sweep_once()
            except Exception as exc:  # noqa: BLE001 - the next sweep tries again
                self._fault("sweep", f"inbox sweep failed: {_one_line(exc)}", exc_info=True)

    def sweep_now(self) -> int:
        """One sweep in the caller's thread: resume claimed files, take settled ones. Files handled."""
        if self.receiver is None:
            raise RuntimeError("the inbox service is not started")
        return self._sweep_once()

    @contextlib.contextmanager
    def sweep_paused(self):
        """No sweep runs inside this block (one under way finishes first), so files that arrive
        meanwhile are the observer's alone; the tests use it to arrange a race instead of hoping."""
        with self._sweep_lock:
            yield

    def _sweepable(self, folder):
        """``(path, lstat)`` of the folder's files the worker does not hold, until a stop."""
        for path in self._listing(folder):
            if self._stop.is_set():
                return
            if self._owned_by_worker(path):
                continue
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            yield path, st

    def _sweep_once(self, resume_only: bool = False) -> int:
        handled = 0
        with self._sweep_lock:
            try:
                for path, st in self._sweepable(self._claimed):
                    if stat.S_ISREG(st.st_mode) and not self._settled(path, st):
                        # Held (its writer may still be at it): the worker finishes it once settled.
                        self._hand_over_held(path, st.st_mtime + self.config.settle_time)
                        continue
                    handled += self._deliver(path, "sweep").won
                for path, st in () if resume_only else self._sweepable(self._inbox):
                    why = kind_skip(st)
                    if why:
                        self._log_skip(path, why)
                        continue
                    if not self._settled(path, st):
                        continue
                    handled += self._deliver(path, "sweep").won
            except OSError as exc:
                self._fault("sweep", f"inbox sweep failed: {_os_error(exc)}")
            else:
                self._clear("sweep")
            self._forget_missing(set(self._listing(self._claimed)) | set(self._listing(self._inbox)))
            self._last_sweep = time.time()
        return handled

    def _forget_missing(self, present: set[str]) -> None:
        with self._lock:
            for memo in (self._stable, self._logged_skips, self._logged_errors):
                for path in [p for p in memo if p not in present]:
                    memo.pop(path, None)
            gone = [key for key in self._faults if key.startswith("file:") and key[5:] not in present]
        self._clear(*gone)  # a file that failed and then went away (taken, removed) is no fault now

    def _count_files(self, folder: str) -> int:
        try:
            with os.scandir(folder) as it:
                return sum(1 for e in it if not quiet_skip(e.name) and e.is_file(follow_symlinks=False))
        except FileNotFoundError:
            return 0

    def _listing(self, folder: str) -> list[str]:
        try:
            with os.scandir(folder) as it:
                names = sorted(e.name for e in it if not quiet_skip(e.name))
        except FileNotFoundError:
            return []
        return [os.path.join(folder, n) for n in names]

    # -- shared by both paths ------------------------------------------------------------
    def _settled(self, path: str, st: os.stat_result) -> bool:
        """Unchanged for ``settle_time``: by its mtime, or as we watched it (for clocks that disagree)."""
        now = time.time()
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        with self._lock:
            if now - st.st_mtime >= self.config.settle_time:
                self._stable.pop(path, None)
                return True
            seen = self._stable.get(path)
            if seen is None or seen[0] != key:
                self._stable[path] = (key, now)
                return self.config.settle_time == 0
            if now - seen[1] >= self.config.settle_time:
                del self._stable[path]
                return True
        return False

    def _log_skip(self, path: str, why: str) -> None:
        with self._lock:
            if self._logged_skips.get(path) == why:
                return
            self._logged_skips[path] = why
        log.warning("inbox: skipping %s: %s (never read)", escape_text(os.path.basename(path), 120), why)

    def _deliver(self, path: str, source: str) -> FileResult:
        try:
            result = deliver(path, source, self.receiver, self.home, self.config, stop=self._stop)
        except Exception as exc:  # noqa: BLE001 - one bad file or a store outage must not stop either path
            return self._delivery_failed(path, source, exc)
        with self._lock:
            self._logged_errors.pop(path, None)
            self._stable.pop(path, None)
            if result.claimed_now:
                self._claims_won[source] += 1
            elif result.status == "lost":
                self._claims_lost += 1
        if result.won:
            self._clear("store", "disk", f"file:{path}")
        elif result.status in ("lost", "skipped"):
            self._clear(f"file:{path}")
        if result.status == "skipped" and result.reason not in ("hidden name", "temporary name", "being read"):
            self._log_skip(path, result.reason or "skipped")
        if result.won and self.on_verdicts is not None:
            try:
                self.on_verdicts(list(result.verdicts), result)
            except Exception:  # noqa: BLE001 - a UI callback must never break delivery
                log.exception("on_verdicts callback failed for %s", result.name)
        return result

    def _delivery_failed(self, path: str, source: str, exc: Exception) -> FileResult:
        """Record why a file could not be delivered; it stays in the inbox and every sweep retries it."""
        name = escape_text(_split_claim(os.path.basename(path))[1], 120)
        where = "claimed in the inbox" if os.path.dirname(path) == self._claimed else "in the inbox"
        if _is_store_error(exc):
            key = "store"
            message = f"store: {escape_text(_one_line(exc), 200)}; files wait in the inbox and are retried"
            try:
                # A store that was read-only stays read-only on this connection; the retry opens a new one.
                self.receiver.db.close()
            except Exception:  # noqa: BLE001 - closing is only a courtesy to the next attempt
                log.debug("closing the connection after a store error failed", exc_info=True)
        elif isinstance(exc, OSError) and exc.errno in _DISK_ERRORS:
            key = "disk"
            message = f"disk: {_os_error(exc)}; files wait in the inbox and are retried"
        elif isinstance(exc, OSError):
            key = f"file:{path}"
            message = f"{name}: {exc.strerror or escape_text(_one_line(exc), 200)}; left {where}, retried every sweep"
        else:
            key = f"file:{path}"
            message = f"{name}: {exc.__class__.__name__}: {escape_text(_one_line(exc), 200)}; left {where}"
        with self._lock:
            first_time = self._logged_errors.get(path) != message
            self._logged_errors[path] = message
        unexpected = not (_is_store_error(exc) or isinstance(exc, OSError))
        self._fault(key, message, exc_info=unexpected)
        if first_time:
            log.info("delivery by %s of %s failed; it waits %s", source, name, where)
        return FileResult(name, source, "error", reason=message)

    def _fault(self, key: str, message: str, exc_info=False) -> bool:
        """Record a fault in force (logged once per distinct message); True if it is news."""
        now = time.time()
        with self._lock:
            old = self._faults.get(key)
            self._faults[key] = (message, old[1] if old else now, now)
            self._last_fault = (message, now)
            news = old is None or old[0] != message
        if news:
            log.warning("%s", message, exc_info=exc_info)
        return news

    def _clear(self, *keys: str) -> None:
        now = time.time()
        with self._lock:
            gone = [self._faults.pop(key) for key in keys if key in self._faults]
            if gone and not self._faults:
                self._recovered_at = now
        for message, since, _seen in gone:
            log.info("fault cleared after %.1f s: %s", now - since, message)

    # -- health ---------------------------------------------------------------------------
    def health(self) -> dict:
        """What the console's header shows: both paths, what waits, and any fault in force.

        ``state`` is ``ok`` or ``fault``; ``last_error`` is the newest fault in
        force (``None`` once everything works again), ``faults`` all of them,
        oldest first; ``last_fault`` and ``recovered_at`` keep the newest fault
        and when the last one cleared, so a console can say "recovered".
        """
        if not self._started or not self.config.observer:
            observer = "off"
        elif self._observer_state == "restarting":
            observer = "restarting"
        else:
            observer = "running" if self._observer_alive() else "dead"
        sweeper = self._threads.get("sweep")
        sweeping = self._started and self.config.sweep and sweeper is not None and sweeper.is_alive()
        with self._lock:
            won = dict(self._claims_won)
            lost = self._claims_lost
            faults = sorted(self._faults.values(), key=lambda f: f[1])
            newest = max(faults, key=lambda f: f[2]) if faults else None
            last_fault = self._last_fault
            recovered_at = self._recovered_at
            restarts = self._observer_restarts
        return {
            "observer": observer,
            "sweep": "running" if sweeping else "off",
            "last_sweep": self._last_sweep,
            "files_waiting": self._count_files(self._inbox) + self._count_files(self._claimed),
            "claims_won": won,
            "claims_lost": lost,
            "state": "fault" if faults else "ok",
            "last_error": newest[0] if newest else None,
            "faults": [f[0] for f in faults],
            "fault_since": faults[0][1] if faults else None,
            "last_fault": last_fault[0] if last_fault else None,
            "last_fault_at": last_fault[1] if last_fault else None,
            "recovered_at": recovered_at,
            "observer_restarts": restarts,
            "inbox": self._inbox,
        }
