"""Crafted backups for the tests, written as streams (a 2 GiB member costs 2 MiB of disk and no
memory), and the command line run with its peak memory and its largest file bounded and read back."""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from core.backup import archive
from tests.support.helpers import ROOT
from tests.support.peak_memory import run_with_peak

MIB = 1 << 20


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    maxrss_mb: float  # the child's peak resident memory (ru_maxrss from wait4)


def measured(*argv: str, cwd: Path | str = ROOT, env: dict | None = None, max_file: int | None = None,
             max_vm: int | None = None) -> Result:
    """``ussd-console ARGV`` with ``RLIMIT_FSIZE`` (no file written past ``max_file``) and
    ``RLIMIT_AS`` set, and its own peak memory (tests/support/peak_memory.py)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        returncode, maxrss_kb = run_with_peak([sys.executable, "-m", "console.cli", *argv], cwd=cwd,
                                              env={**os.environ, **(env or {})}, stdout=out, stderr=err,
                                              max_file=max_file, max_vm=max_vm)
        out.seek(0)
        err.seek(0)
        return Result(returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                      maxrss_kb / 1024)


class GzTar:
    """A .tar.gz written header by header. A long run of one byte is compressed once and the
    compressed chunk repeated (after a full flush the compressor starts afresh, so each copy is
    what compressing it again would give)."""

    def __init__(self, path: Path) -> None:
        self.out = open(path, "wb")
        self.out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
        self.z = zlib.compressobj(9, zlib.DEFLATED, -15)
        self.crc = 0
        self.length = 0

    def feed(self, data: bytes) -> None:
        self.crc = zlib.crc32(data, self.crc)
        self.length += len(data)
        self.out.write(self.z.compress(data))

    def run(self, byte: bytes, size: int) -> None:
        """``size`` copies of ``byte``."""
        chunk = byte * MIB
        self.out.write(self.z.flush(zlib.Z_FULL_FLUSH))
        whole, rest = divmod(size, MIB)
        if whole:
            packed = self.z.compress(chunk) + self.z.flush(zlib.Z_FULL_FLUSH)
            self.out.write(packed * whole)
            for _ in range(whole):
                self.crc = zlib.crc32(chunk, self.crc)
            self.length += whole * MIB
        self.feed(byte * rest)

    def header(self, info: tarfile.TarInfo, fmt=tarfile.USTAR_FORMAT) -> None:
        self.feed(info.tobuf(fmt, "utf-8", "surrogateescape"))

    def pad(self, size: int) -> None:
        self.feed(bytes(-size % tarfile.BLOCKSIZE))

    def member(self, name: str, data: bytes, **fields) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o600
        for key, value in fields.items():
            setattr(info, key, value)
        self.header(info)
        if info.isreg():
            self.feed(data)
            self.pad(len(data))

    def zeros(self, name: str, size: int) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode = size, 0o600
        self.header(info, tarfile.GNU_FORMAT)  # base-256 sizes, should one be over 8 GiB
        self.run(b"\0", size)
        self.pad(size)

    def extended(self, kind: bytes, size: int) -> None:
        """A pax (``x``) or GNU long-name (``L``, ``K``) header announcing ``size`` bytes, and them."""
        info = tarfile.TarInfo("././@PaxHeader" if kind == tarfile.XHDTYPE else "././@LongLink")
        info.type, info.size = kind, size
        self.header(info, tarfile.GNU_FORMAT)
        if kind == tarfile.XHDTYPE:
            prefix = f"{size} comment=".encode()
            self.feed(prefix)
            self.run(b"A", size - len(prefix) - 1)
            self.feed(b"\n")
        else:
            self.run(b"A", size - 1)
            self.feed(b"\0")
        self.pad(size)

    def close(self) -> None:
        self.feed(bytes(2 * tarfile.BLOCKSIZE))
        self.out.write(self.z.flush())
        self.out.write(self.crc.to_bytes(4, "little") + (self.length & 0xFFFFFFFF).to_bytes(4, "little"))
        self.out.close()


def members_of(file: Path) -> dict[str, bytes]:
    """A real (plain) backup's members, in their order."""
    with tarfile.open(file, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}


def manifest_of(members: dict[str, bytes]) -> dict:
    return json.loads(members[archive.MANIFEST])


def signed(manifest: dict, home) -> bytes:
    """``manifest`` signed with ``home``'s own backup key, as the manifest member's bytes: a crafted
    backup must pass the signature so that the streaming check is what refuses it."""
    from tests.support.backup_support import resign

    members = {archive.MANIFEST: json.dumps(manifest).encode()}
    resign(members, home)
    return members[archive.MANIFEST]


def listing(manifest: dict, name: str, data: bytes) -> dict:
    """``manifest`` with ``name`` listed as holding ``data`` (its hash and size right)."""
    import hashlib

    manifest = json.loads(json.dumps(manifest))
    manifest["members"][name] = hashlib.sha256(data).hexdigest()
    if "sizes" in manifest:
        manifest["sizes"][name] = len(data)
    return manifest


def repack(members: dict[str, bytes], dest: Path, fmt=tarfile.PAX_FORMAT, pax: dict | None = None) -> Path:
    """Members (name -> bytes, the manifest first) as a .tar.gz, as Python's tarfile writes it."""
    with tarfile.open(dest, "w:gz", format=fmt) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o600
            if pax:
                info.pax_headers = dict(pax)
            tar.addfile(info, io.BytesIO(data))
    return dest
