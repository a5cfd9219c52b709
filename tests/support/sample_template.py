"""Homes built once per run and copied per test: the console's sample store (tools/sample_store.py)
and any other a test module names (``built_once``).

Building the sample store ingests the whole demo story through the receiver, a second or more per
test on a busy machine, and more than eighty console tests start from it; a home with operators,
signed changes and an inbox file costs as much again. The first worker to ask builds a home under a
file lock, in a folder every xdist worker of the run shares, named by what it is and a hash of
what it is made from (the builder, the core's code, ...): a change to any of them builds a new
one. Each test gets its own copy, so none sees another's writes.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import shutil
from pathlib import Path
from typing import Callable

from core.home import Home

ROOT = Path(__file__).resolve().parents[2]
# What the sample store's content and layout follow from.
MADE_FROM = ("tools/sample_store.py", "console/demo", "core")


@functools.cache
def source_hash(made_from: tuple[str, ...] = MADE_FROM) -> str:
    """Once per process: what a home is made from does not change while the tests run."""
    digest = hashlib.sha256()
    for top in made_from:
        path = ROOT / top
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()
                                                     and "__pycache__" not in p.parts)
        for f in files:
            digest.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def built_once(shared: Path, name: str, made_from: tuple[str, ...], build: Callable[[Home, Path], None]) -> Path:
    """The home ``build(home, scratch)`` makes, in ``shared`` (a folder of this run), built first if no
    worker has. ``scratch`` is a folder beside it for what the build needs and the home does not keep
    (passphrase files)."""
    folder = shared / f"{name}-{source_hash(made_from)}"
    folder.mkdir(parents=True, exist_ok=True)
    built = folder / "home"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "done").exists():
            for half_made in (built, folder / "scratch"):  # a build that stopped half way
                if half_made.exists():
                    shutil.rmtree(half_made)
            (folder / "scratch").mkdir()
            build(Home(built), folder / "scratch")
            (folder / "done").write_text("")
    return built


def home_copy(template: Path, where: Path) -> Home:
    """A home at ``where`` holding what ``template`` holds (file modes kept: key files stay 0600)."""
    shutil.copytree(template, where, symlinks=True, dirs_exist_ok=True)
    return Home(where)


def _build_sample(home: Home, _scratch: Path) -> None:
    from tools.sample_store import build

    build(home)


def template(shared: Path) -> Path:
    """The built sample home in ``shared``."""
    return built_once(shared, "sample-store", MADE_FROM, _build_sample)


def sample_copy(shared: Path, where: Path) -> Home:
    """A home at ``where`` holding the sample store, as ``tools.sample_store.build`` leaves it."""
    return home_copy(template(shared), where)
