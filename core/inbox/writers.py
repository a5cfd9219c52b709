"""Whether a claimed file can still grow: does any process hold it open for writing?

A file is archived (and its claimed name unlinked) only once nothing more can
arrive in it; a writer that kept the file open and paused would otherwise
append into an unlinked inode. After the claim's rename the file has no name
in the inbox, so the only writers left are those that already hold it open.

What the platform tells, in order: a Linux read lease (``F_SETLEASE``), which
the kernel grants only while no process has the file open for writing, taken
and dropped at once; where leases are refused (another owner without
``CAP_LEASE``, a filesystem without them), the open descriptors in ``/proc``;
where neither can tell, None, and the caller falls back to quiet time.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import signal

_FLAGS = re.compile(r"^flags:\s*([0-7]+)", re.M)


def open_for_writing(fd: int, path: str) -> bool | None:
    """True if some process has the file behind ``fd`` (opened read-only) open for writing."""
    lease = getattr(fcntl, "F_SETLEASE", None)
    if lease is not None:
        try:
            fcntl.fcntl(fd, lease, fcntl.F_RDLCK)
        except OSError as exc:
            if exc.errno == errno.EAGAIN:
                return True
        else:
            fcntl.fcntl(fd, lease, fcntl.F_UNLCK)
            return False
    return _proc_writers(os.fstat(fd), path)


def _proc_writers(st: os.stat_result, path: str) -> bool | None:
    """The same question through ``/proc/*/fd``; None if any process's descriptors are hidden from us."""
    if not os.path.isdir("/proc/self/fdinfo"):
        return None
    target = os.path.realpath(path)
    blind = False
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        folder = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(folder)
        except FileNotFoundError:
            continue
        except PermissionError:
            blind = True
            continue
        for fd in fds:
            try:
                if os.readlink(f"{folder}/{fd}") != target:
                    continue
                found = os.stat(f"{folder}/{fd}")
                if (found.st_dev, found.st_ino) != (st.st_dev, st.st_ino):
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}") as fh:
                    flags = _FLAGS.search(fh.read())
            except OSError:
                continue
            if flags is None or int(flags.group(1), 8) & (os.O_WRONLY | os.O_RDWR):
                return True
    return None if blind else False


def ignore_lease_breaks() -> None:
    """Call once from the main thread of a receiving process: SIGIO ignored instead of fatal.

    The kernel signals a lease holder (SIGIO, whose default is to terminate) when another process
    opens the file for writing while the lease is held. ``open_for_writing`` holds one only for
    the microseconds between taking and dropping it, on a file no longer in the inbox, but a
    receiver must not be killed by that chance; this process has no other use for SIGIO.
    """
    sigio = getattr(signal, "SIGIO", None)
    if sigio is not None and signal.getsignal(sigio) == signal.SIG_DFL:
        signal.signal(sigio, signal.SIG_IGN)
