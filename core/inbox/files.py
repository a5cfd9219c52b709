"""Inbox files and claims: the folder layout, atomic claims, archive moves.

A file is claimed by renaming it into ``inbox/.claimed/`` (an atomic rename, so
when two paths reach one file exactly one wins). While one worker reads and
archives a claimed file it holds an ``flock`` on it; the kernel drops it if the
process dies, so a crashed worker's file is taken over at once and two live
ones never work on one file. The archive copy is staged under a name derived
from the claim, so a worker resuming after a crash finds the copy it made
instead of making a second one. Nothing here touches the store.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import hashlib
import itertools
import logging
import os
import re
import stat
import threading
import time
from pathlib import Path

from core.home import Home, claimed_dir, private_folder
from core.i18n import N_, MarkedError
from core.rules.privacy import RUN_BYTES, mask_phones, mask_phones_bytes
from core.rules.text import escape_text

log = logging.getLogger("ussd.inbox")



NAME_MAX = 255


_counter = itertools.count()


# Claimed files being read in this process: a second thread leaves them alone (other
# processes are kept apart by the progress row's compare-and-set instead).
_in_flight: set[str] = set()


_in_flight_lock = threading.Lock()


class InboxPathError(MarkedError, ValueError):
    """A path the inbox refuses to use (outside the home, not in the inbox); the message is for the operator."""


def inside_home(home: Home, path: Path) -> Path:
    """``path`` resolved; a ``ValueError`` if a symlink takes it outside the home."""
    root = home.root.resolve()
    real = path.resolve()
    if real != root and root not in real.parents:
        raise InboxPathError(N_("%(path)s resolves to %(real)s, outside the home %(root)s; refusing to use it"),
                             path=path, real=real, root=root)
    return real


def prepare_home(home: Home) -> None:
    """Create the inbox folders (0700, the receiver's alone); refuse any that a symlink points outside
    the home, and a symlink for the logs folder at all. An existing ``inbox/`` keeps its mode: made
    ``3770`` for a gateway group at install (docs/running-securely.md), it stays so."""
    for folder in (home.inbox, claimed_dir(home), home.processed, home.rejected):
        if not folder.is_symlink():  # a link to a folder inside the home is the administrator's layout
            private_folder(folder)
        inside_home(home, folder)
    private_folder(home.logs)


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


def home_tag(home: Home) -> str:
    """A short tag of the home folder carried in each claim's name (and so in its progress row's key):
    several homes may share one PostgreSQL store, and a home must tell its own claims from theirs."""
    digest = hashlib.sha256(os.fsencode(os.path.realpath(home.root))).hexdigest()[:10]
    return "h" + "".join(chr(ord("a") + int(c, 16)) for c in digest)  # letters: no digit run for the phone mask


def claim_name(source: str, name: str, home: Home) -> str:
    token = f"{time.time_ns():x}-{os.getpid():x}-{next(_counter):x}-{home_tag(home)}"
    prefix = f"{token}.{source}~"
    room = NAME_MAX - len(os.fsencode(prefix))
    raw = os.fsencode(name)
    if len(raw) > room:
        name = os.fsdecode(raw[:room].decode("utf-8", "ignore").encode("utf-8"))
    return prefix + name


def split_claim(claim: str) -> tuple[str | None, str]:
    """``(source, inbox name)`` from a claimed file's name."""
    prefix, tilde, name = claim.partition("~")
    if not tilde:
        return None, claim
    _token, _dot, source = prefix.partition(".")
    if not (source.isidentifier() and source.isascii() and len(source) <= 16):
        source = ""  # not a claim this program made (a file put into .claimed/ by hand)
    return (source or None), name


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


def existing_link(st: os.stat_result, folder: Path, name: str) -> Path | None:
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


def link_in(src: Path, folder: Path, name: str) -> Path:
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


def drop_stages(home: Home, claim: str) -> None:
    for stage in _stages(home, claim):
        try:
            os.unlink(stage)
        except FileNotFoundError:
            pass


def archive(home: Home, claim: str, name: str, data: bytes | Path, where: str | None = None) -> Path:
    """Put ``data`` into ``processed/YYYY-MM-DD/`` (or ``rejected/``) under ``name`` (or a free variant), once.

    ``where`` is ``"rejected"`` for a rejected file's copy, else the day. The
    copy is written to a stage named after the claim (hidden, beside the
    claimed file, carrying its day or ``rejected``), fsynced, then linked in
    under a free name, and the stage is removed only after the file's row says
    ``done``. A worker that resumes the claim after a crash finds a stage with a
    second link and takes that link as the copy, instead of making a second
    one; a stage with one link is an unfinished write and is written again.
    ``data`` given as a path (a file too big to hold) is copied masked, holes kept.
    """
    for stage in _stages(home, claim):
        st = os.lstat(stage)
        tag = stage.name[len(_stage_prefix(claim)) : -len(".part")]
        if st.st_nlink > 1 and (tag == "rejected" or re.fullmatch(r"\d{4}-\d{2}-\d{2}", tag)):
            found = existing_link(st, _copy_folder(home, tag), name)
            if found is not None:
                return found
        os.unlink(stage)
    tag = where or dt.date.fromtimestamp(time.time()).isoformat()
    folder = _copy_folder(home, tag)
    folder.mkdir(parents=True, exist_ok=True)
    inside_home(home, folder)
    stage = claimed_dir(home) / f"{_stage_prefix(claim)}{tag}.part"
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


def _copy_folder(home: Home, tag: str) -> Path:
    return home.rejected if tag == "rejected" else home.processed / tag


def _write_synced(path: Path, data: bytes | Path) -> None:
    with open(path, "xb") as fh:
        if isinstance(data, Path):
            _copy_masked(data, fh)
        else:
            fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _copy_masked(source: Path, out) -> None:
    """Copy a file too big to read whole, phone-like runs masked, its holes left holes (a 1 GB
    sparse file costs no disk). A chunk is cut after its last byte that cannot be in a run,
    so no run is split between two chunks."""
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, getattr(os, "SEEK_DATA", os.SEEK_SET))
                end = os.lseek(fd, start, getattr(os, "SEEK_HOLE", os.SEEK_END))
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # only a hole is left
                    break
                start, end = pos, size
            out.seek(out.tell() + (start - pos))
            os.lseek(fd, start, os.SEEK_SET)
            carry = b""
            left = end - start
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                left -= len(chunk)
                chunk = carry + chunk
                cut = len(chunk)
                while cut > 0 and chunk[cut - 1] in RUN_BYTES and len(chunk) - cut < 4096:
                    cut -= 1
                out.write(mask_phones_bytes(chunk[:cut]))
                carry = chunk[cut:]
            out.write(mask_phones_bytes(carry))
            pos = end
        out.truncate(out.tell() + (size - pos))
    finally:
        os.close(fd)


def masked_name(name: str) -> str:
    """An inbox name for logs, results and the store: escaped, phone-like runs masked."""
    return mask_phones(escape_text(name, 120))


def home_relative(home: Home, path: Path) -> str:
    """A path for the store and the log: under the home, escaped (the name came from outside)."""
    try:
        path = path.relative_to(home.root)
    except ValueError:
        pass
    return mask_phones(escape_text(str(path), 1000))


def reserve_claim(path: Path) -> bool:
    with _in_flight_lock:
        if str(path) in _in_flight:
            return False
        _in_flight.add(str(path))
        return True


def release_claim(path: Path) -> None:
    with _in_flight_lock:
        _in_flight.discard(str(path))


def lock_claim(fd: int) -> bool:
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


def same_file(path: Path, st: os.stat_result) -> bool:
    try:
        now = os.lstat(path)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def changed_since(path: Path, before: os.stat_result) -> bool:
    """The file grew or was touched while it was being read: its writer is still at it."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (now.st_size, now.st_mtime_ns, now.st_ino) != (before.st_size, before.st_mtime_ns, before.st_ino)
