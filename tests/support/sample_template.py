"""The console's sample store (tools/sample_store.py), built once per run and copied per test.

Building it ingests the whole demo story through the receiver, a second or more per test on a
busy machine; more than eighty console tests start from it. The first worker to ask builds it
under a file lock, in a folder every xdist worker of the run shares, named by a hash of what
the store is made from (the sample files, the builder, the core's code): a change to any of
them builds a new one. Each test gets its own copy, so none sees another's writes.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import shutil
from pathlib import Path

from core.home import Home

ROOT = Path(__file__).resolve().parents[2]
# What the store's content and layout follow from.
MADE_FROM = ("tools/sample_store.py", "console/demo", "core")


@functools.cache
def source_hash() -> str:
    """Once per process: what the store is made from does not change while the tests run."""
    digest = hashlib.sha256()
    for top in MADE_FROM:
        path = ROOT / top
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()
                                                     and "__pycache__" not in p.parts)
        for f in files:
            digest.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def template(shared: Path) -> Path:
    """The built home in ``shared`` (a folder of this run), building it first if no worker has."""
    folder = shared / f"sample-store-{source_hash()}"
    folder.mkdir(parents=True, exist_ok=True)
    built = folder / "home"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "done").exists():
            from tools.sample_store import build

            if built.exists():
                shutil.rmtree(built)  # a build that stopped half way
            build(Home(built))
            (folder / "done").write_text("")
    return built


def sample_copy(shared: Path, where: Path) -> Home:
    """A home at ``where`` holding the sample store, as ``tools.sample_store.build`` leaves it."""
    shutil.copytree(template(shared), where, symlinks=True)
    return Home(where)
