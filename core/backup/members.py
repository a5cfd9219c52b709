"""Reading a backup's tar stream one member at a time, with every size bounded before it is read.

Python's ``tarfile`` reads a pax or GNU long-name header whole into memory, and writes out a
member whatever its size: a crafted backup of a few KiB could take the memory or the disk before
any check. Here each 512-byte header is parsed on its own (``TarInfo.frombuf``), an extended
header over ``EXTENDED_MAX`` is refused unread, and the caller judges a member's name and size
before a byte of its data is read.
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass

from core.i18n import N_

from .archive import BackupError

BLOCK = tarfile.BLOCKSIZE
EXTENDED_MAX = 8 << 10  # a pax or GNU long-name header: backup writes a few dozen bytes, when any
TRAILER_MAX = 1 << 20  # zeros after the end marker (tar pads its last record to 10 KiB)
CHUNK = 1 << 20

_KINDS = {tarfile.REGTYPE: "file", tarfile.AREGTYPE: "file", tarfile.DIRTYPE: "folder",
          tarfile.SYMTYPE: "symbolic link", tarfile.LNKTYPE: "hard link", tarfile.CHRTYPE: "device",
          tarfile.BLKTYPE: "device", tarfile.FIFOTYPE: "FIFO", tarfile.CONTTYPE: "contiguous file",
          tarfile.GNUTYPE_SPARSE: "sparse file"}
_EXTENDED = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
_DIGITS = re.compile(rb"[0-9]{1,20}")


@dataclass(frozen=True)
class Header:
    name: str
    kind: str  # "file" for a plain file; otherwise what it is, in words ("symbolic link", ...)
    size: int


def shown(name: str) -> str:
    """A member's name as a message quotes it: escaped, and cut at 80 characters."""
    return repr(name[:80]) + ("..." if len(name) > 80 else "")


def _pax_records(data: bytes) -> dict[str, str]:
    """``LENGTH KEY=VALUE\\n`` records; anything else is a damaged header."""
    out, pos = {}, 0
    while pos < len(data) and data[pos] != 0:
        space = data.find(b" ", pos, pos + 21)
        if space < 0 or not _DIGITS.fullmatch(data[pos:space]):
            raise BackupError(N_("the backup is damaged (a pax header does not read)"))
        end = pos + int(data[pos:space])
        key, eq, value = data[space + 1:end - 1].partition(b"=")
        if end <= space + 1 or end > len(data) or data[end - 1:end] != b"\n" or not eq:
            raise BackupError(N_("the backup is damaged (a pax header does not read)"))
        out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos = end
    return out


class TarStream:
    """A tar read from ``raw`` (anything with ``read(n)``): ``next()`` gives each member's header,
    ``chunks()`` its data; nothing is buffered beyond one chunk."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self._left = 0  # data bytes of the current member not yet read
        self._pad = 0

    def _exact(self, n: int) -> bytes:
        parts, want = [], n
        while want:
            got = self.raw.read(min(want, CHUNK))
            if not got:
                raise BackupError(N_("the backup is cut short or damaged (the archive ends inside a member)"))
            parts.append(got)
            want -= len(got)
        return b"".join(parts)

    def _skip(self) -> None:
        while self._left:
            self._left -= len(self._exact(min(self._left, CHUNK)))
        if self._pad:
            self._exact(self._pad)
            self._pad = 0

    def _start(self, size: int) -> None:
        self._left, self._pad = size, -size % BLOCK

    def next(self) -> Header | None:
        """The next member's header, or None at the archive's end marker."""
        self._skip()
        pax: dict[str, str] = {}
        long_name = None
        while True:
            block = self._exact(BLOCK)
            if block.count(0) == BLOCK:
                return None
            try:
                info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
            except (tarfile.HeaderError, ValueError) as exc:
                raise BackupError(N_("the backup is damaged (a tar header does not read: %(reason)s)"),
                                  reason=exc) from None
            if info.size < 0:
                raise BackupError(N_("the backup is damaged (a tar header gives a negative size)"))
            if info.type not in _EXTENDED:
                break
            what = "pax" if info.type in (tarfile.XHDTYPE, tarfile.XGLTYPE) else "long-name"
            if info.size > EXTENDED_MAX:
                raise BackupError(N_("the backup holds a %(what)s header of %(size)s bytes (at most %(most)s): "
                                     "not a backup this program made; it was not read"),
                                  what=what, size=f"{info.size:,}", most=f"{EXTENDED_MAX:,}")
            if info.type == tarfile.XGLTYPE:
                raise BackupError(N_("the backup holds a pax global header, which backup never writes"))
            self._start(info.size)
            data = b"".join(self.chunks())
            if info.type == tarfile.XHDTYPE:
                pax.update(_pax_records(data))
            elif info.type == tarfile.GNUTYPE_LONGNAME:
                long_name = data.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        name = pax.get("path", long_name if long_name is not None else info.name)
        size = info.size
        if "size" in pax:
            if not _DIGITS.fullmatch(pax["size"].encode("ascii", "replace")):
                raise BackupError(N_("the backup is damaged (the member %(member)s has a pax size that is not a"
                                     " number)"), member=shown(name))
            size = int(pax["size"])
        kind = _KINDS.get(info.type, "special file")
        if kind == "file" and any(key.startswith("GNU.sparse.") for key in pax):
            kind = "sparse file"
        # A link, device or folder has no data: its size field is not read as one.
        self._start(size if info.type in tarfile.REGULAR_TYPES else 0)
        return Header(name, kind, size)

    def chunks(self):
        """The current member's data, a chunk at a time (each call after ``next`` reads it once)."""
        while self._left:
            data = self._exact(min(self._left, CHUNK))
            self._left -= len(data)
            yield data
        if self._pad:
            self._exact(self._pad)
            self._pad = 0

    def finish(self) -> None:
        """After the end marker: only zeros (tar's padding) up to the end of the stream, whose reader
        (gzip, age) then checks its own trailer."""
        seen = 0
        while data := self.raw.read(CHUNK):
            seen += len(data)
            if data.count(0) != len(data) or seen > TRAILER_MAX:
                raise BackupError(N_("the backup is damaged (something follows the archive's end marker)"))
