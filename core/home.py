"""Where things live under the home folder, and how the home is chosen."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from core.i18n import N_, MarkedError, _

ENV_HOME = "USSD_CONSOLE_HOME"
DEFAULT_HOME = "data"
DB_NAME = "receiver.db"
# One log per home: the headless watcher and the console write the same file, in one format.
LOG_NAME = "receiver.log"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def sync_folder(folder: Path) -> None:
    """A name renamed or linked into a folder survives a power cut only once the folder is synced."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# What the receiver creates in a home is its user's alone, whatever umask it was started with:
# files 0600, folders 0700 (the only exception, a gateway group's inbox, is made on purpose).
PRIVATE_UMASK = 0o077
FILE_MODE = 0o600
FOLDER_MODE = 0o700
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def private_umask() -> int:
    """Tighten this process's umask to at least ``PRIVATE_UMASK`` (SQLite's store and its -wal and
    -shm files, archive copies, heartbeats: everything made without an explicit mode follows it)."""
    old = os.umask(PRIVATE_UMASK)
    os.umask(old | PRIVATE_UMASK)
    return old


class PlantedLink(OSError):
    """A symlink where the receiver writes a file or folder of its own: refused, never followed,
    so a link planted at ``logs/receiver.log`` can never make the receiver write into its target."""

    def __init__(self, path) -> None:
        super().__init__(errno.ELOOP, "a symlink stands where the receiver writes its own file; "
                         "refusing to write through it (remove the link)", os.fspath(path))


def _refuse_link(path) -> None:
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise PlantedLink(path)
    except FileNotFoundError:
        pass


def private_folder(path, mode: int = FOLDER_MODE) -> Path:
    """``path`` as a real folder (created ``mode`` when missing, parents included); a symlink there
    is a ``PlantedLink``. An existing folder keeps its mode: loosening or tightening it is the
    administrator's call, and ``status`` says when it is open to others."""
    path = Path(path)
    _refuse_link(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(path, mode)
            os.chmod(path, mode, follow_symlinks=False)  # the umask may have taken bits off ``mode``
        except FileExistsError:
            pass
    _refuse_link(path)
    return path


def open_private(path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_APPEND, mode: int = FILE_MODE) -> int:
    """Open a file the receiver writes, never through a symlink (``O_NOFOLLOW``, the folder it is in
    checked too); a new file gets exactly ``mode``. Returns the descriptor; a link is ``PlantedLink``."""
    path = Path(path)
    _refuse_link(path.parent)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PlantedLink(path) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file; refusing to write it", os.fspath(path))
        if st.st_uid == os.geteuid() and st.st_mode & 0o777 & ~mode:
            os.fchmod(fd, st.st_mode & 0o777 & mode)  # never looser than asked, whatever the umask was
    except BaseException:
        os.close(fd)
        raise
    return fd


def replace_private(path, data: bytes, mode: int = FILE_MODE) -> None:
    """Write ``path`` whole (a temporary file renamed over it, so a reader never sees half); the
    folder and the name must not be symlinks (``PlantedLink``), and the file gets ``mode``."""
    path = Path(path)
    _refuse_link(path.parent)
    _refuse_link(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        _refuse_link(path)  # planted meanwhile: still never followed (a rename replaces the name)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class PrivateFileError(MarkedError, ValueError):
    """An owner-only file that is missing, cannot be trusted or cannot be read; the message is for
    the operator. ``missing``: there is no file at the path."""

    def __init__(self, message: str, missing: bool = False, **values: object) -> None:
        super().__init__(message, **values)
        self.missing = missing


PRIVATE_READ_MAX = 1 << 20
# The owner-only files ``read_private`` is asked to read, named in its errors in the operator's language.
PRIVATE_FILES = (N_("the key file"), N_("the passphrase file"), N_("the secret file"))


def read_private(path, what: str, *, limit: int = PRIVATE_READ_MAX, pipe: bool = False) -> bytes:
    """The bytes of a file only its owner may read: an operator's key file, a gateway's secret, a
    passphrase file. ``what`` names it in errors ("the key file").

    One set of checks for all of them: the last name is not a symbolic link (never followed), the
    file is a regular file (with ``pipe``, a named pipe too, which a script writes a passphrase
    into; its first line is read and the writer may stay), neither its group nor others may read
    or write it, and it holds at most ``limit`` bytes. A process out of open files gets its
    ``OSError`` (the file is not at fault: a post is answered 503 and re-sent, not refused).
    """
    from core.rules.text import Twofold, escape_text

    shown = escape_text(os.fspath(path), 200)
    what = Twofold(what, lambda named=what: _(named))  # a PRIVATE_FILES name said in the operator's language
    try:  # O_NONBLOCK: a named pipe where none is wanted is refused at once, not waited on
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | _CLOEXEC | (0 if pipe else os.O_NONBLOCK))
    except OSError as exc:
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            raise
        if exc.errno == errno.ELOOP:
            raise PrivateFileError(N_("%(what)s %(path)s is a symbolic link; give the file itself"), what=what,
                                   path=shown) from None
        raise PrivateFileError(N_("cannot read %(what)s %(path)s: %(reason)s"), missing=exc.errno == errno.ENOENT,
                               what=what, path=shown, reason=exc.strerror) from None
    try:
        info = os.fstat(fd)
        fifo = pipe and stat.S_ISFIFO(info.st_mode)
        if not (stat.S_ISREG(info.st_mode) or fifo):
            raise PrivateFileError(N_("%(what)s %(path)s is not a regular file"), what=what, path=shown)
        if info.st_mode & 0o077:
            raise PrivateFileError(N_("%(what)s %(path)s is open to others (mode %(mode)s); run: chmod 600 %(path)s"),
                                   what=what, path=shown, mode=f"{info.st_mode & 0o777:04o}")
        chunks, size = [], 0
        while size <= limit:
            try:
                chunk = os.read(fd, min(65536, limit + 1 - size))
            except OSError as exc:
                raise PrivateFileError(N_("cannot read %(what)s %(path)s: %(reason)s"), what=what, path=shown,
                                       reason=exc.strerror) from None
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if fifo and b"\n" in chunk:
                break
    finally:
        os.close(fd)
    if size > limit:
        raise PrivateFileError(N_("%(what)s %(path)s is larger than %(limit)s bytes"), what=what, path=shown, limit=limit)
    return b"".join(chunks)


class LooseMode(NamedTuple):
    """A part of the home others may read or write: its mode, and the mode it should have."""

    path: Path
    mode: int
    private: int

    def __str__(self) -> str:  # the English line `status --json` carries
        return f"{self.path} is mode {self.mode:04o}, open to others; run: chmod {self.private:04o} {self.path}"


def looser_than_private(root) -> list[str]:
    """What ``status`` warns about, as the English lines ``status --json`` gives."""
    return [str(found) for found in loose_modes(root)]


def loose_modes(root) -> list[LooseMode]:
    """Paths under the home that others can read or write (or the group write). ``inbox/`` may be
    the gateway group's (group-writable); the files in it and in the archive came from the gateways
    and are theirs, so only the receiver's own parts are looked at."""
    root = Path(root)
    found: list[LooseMode] = []

    def check(path: Path, allowed: int) -> None:
        try:
            st = os.lstat(path)
        except OSError:
            return
        if stat.S_ISLNK(st.st_mode):
            return
        mode = st.st_mode & 0o777
        if mode & ~allowed:
            found.append(LooseMode(path, mode, mode & allowed))

    check(root, 0o750)
    check(root / "inbox", 0o770)
    for name in (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", DB_NAME + "-journal", "config.toml"):
        check(root / name, 0o640)
    for folder in ("logs", "metrics", "exports", "operators", "run"):
        check(root / folder, 0o750)
        try:
            entries = sorted(os.scandir(root / folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            check(Path(entry.path), 0o750 if entry.is_dir(follow_symlinks=False) else 0o640)
    return found


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def resolve(cls, given: str | os.PathLike | None = None) -> "Home":
        """``--home`` wins, then ``$USSD_CONSOLE_HOME``, then ``./data``."""
        chosen = given or os.environ.get(ENV_HOME) or DEFAULT_HOME
        return cls(Path(chosen).expanduser().resolve())

    @property
    def db(self) -> Path:
        return self.root / DB_NAME

    @property
    def inbox(self) -> Path:
        return self.root / "inbox"

    @property
    def processed(self) -> Path:
        return self.root / "processed"

    @property
    def rejected(self) -> Path:
        return self.root / "rejected"

    @property
    def operators(self) -> Path:
        return self.root / "operators"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def log_file(self) -> Path:
        return self.logs / LOG_NAME

    @property
    def exports(self) -> Path:
        return self.root / "exports"

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    def ensure(self) -> "Home":
        """Create the home (0700) when missing, with a ``config.toml`` that lists every setting
        commented out; an existing home keeps its mode and its config (or its lack of one)."""
        from core.config_template import write_new_config

        new = not os.path.lexists(self.root) or (self.root.is_dir() and not any(self.root.iterdir()))
        private_folder(self.root)
        if new:
            write_new_config(self.config)
        return self


# -- the inbox's folders and the run folder, as the home lays them out -------------------------
CLAIMED = ".claimed"  # inbox/.claimed/: the files a worker has claimed and is reading
TEMP_SUFFIXES = (".tmp", ".part", ".partial")


def claimed_dir(home: Home) -> Path:
    return home.inbox / CLAIMED


def run_dir(home: Home) -> Path:
    """``<home>/run``: the inbox services' heartbeat records and the operators' unlock locks."""
    return home.root / "run"


def quiet_skip(name: str) -> str | None:
    """Names that are never read and not worth a log line: dotfiles and temp names."""
    if name.startswith("."):
        return "hidden name"
    if name.lower().endswith(TEMP_SUFFIXES):
        return "temporary name"
    return None


def count_files(folder) -> int:
    """Files waiting in ``folder`` (names the inbox never reads do not count)."""
    try:
        with os.scandir(folder) as it:
            return sum(1 for e in it if not quiet_skip(e.name) and e.is_file(follow_symlinks=False))
    except FileNotFoundError:
        return 0


def files_waiting(home: Home) -> int:
    """The files in the inbox and its claimed folder: what ``status`` counts as waiting."""
    return count_files(home.inbox) + count_files(claimed_dir(home))
