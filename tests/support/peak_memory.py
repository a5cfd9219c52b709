"""A command's own peak memory, read the way a field laptop would feel it.

A command forked from the test's worker (or the bench) would not do: Linux carries a process's
high-water resident size across exec, so the child's ``ru_maxrss`` starts at the size of the
process it was forked from, vfork or fork alike (a command forked from a process holding 300 MB
reads 312 MB; the same command through this launcher, 44 MB). The command is therefore started
by a small launcher: it sets the limits, forks the command, and writes its exit code and its
``wait4`` peak to a file. The floor is the launcher's few MB.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

_LAUNCH = """
import os, resource, sys
fsize, vm, report, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
if fsize >= 0:
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
if vm >= 0:
    resource.setrlimit(resource.RLIMIT_AS, (vm, vm))
pid = os.fork()
if pid == 0:
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as fh:
    fh.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def run_with_peak(argv: list[str], *, cwd, env: dict, stdout, stderr, max_file: int | None = None,
                  max_vm: int | None = None) -> tuple[int, int]:
    """Run ``argv`` (``RLIMIT_FSIZE`` and ``RLIMIT_AS`` set when given) to its end: its exit code
    and its own peak resident memory in KiB."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "wait4"
        launch = [sys.executable, "-c", _LAUNCH, str(-1 if max_file is None else max_file),
                  str(-1 if max_vm is None else max_vm), str(report), *argv]
        launcher = subprocess.run(launch, cwd=cwd, stdout=stdout, stderr=stderr, env=env)
        if launcher.returncode != 0 or not report.exists():
            raise RuntimeError(f"the memory launcher failed (exit {launcher.returncode}) for {argv[:4]}")
        returncode, maxrss_kb = map(int, report.read_text().split())
        return returncode, maxrss_kb
