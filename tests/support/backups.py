"""Backup tests' tools: the command in-process, a plain failure, a hand-made bad archive."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from tests.support.cli import Ran, run_cli


def run(*argv: str, env: dict | None = None) -> Ran:
    return run_cli(*argv, env=env)


def assert_plain_failure(proc) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.stderr.strip(), "a failure says why"


def repack(src: Path, dest: Path, change) -> None:
    """The same archive with ``change(members: dict[name, bytes])`` applied (a hand-made bad backup)."""
    with tarfile.open(src, "r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar}
    change(members)
    with tarfile.open(dest, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
