"""The frame trailer: POSIX ``cksum`` of the body, mod 256.

``cksum`` is not zlib's CRC-32: it runs the same polynomial MSB-first from a zero
register, then feeds the message length, then inverts. Two implementations live
here: a table-driven one that reads like the POSIX definition (the reference),
and a fast one used on the hot path that gets the same number from the C
``zlib.crc32`` over bit-reversed bytes. Tests hold them equal and check both
against the system ``cksum``. Keep the two side by side: the reference is how a
reader checks the fast one.
"""

from __future__ import annotations

import zlib

_POLY = 0x04C11DB7
_MASK = 0xFFFFFFFF


def _make_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ _POLY) if crc & 0x80000000 else (crc << 1)
            crc &= _MASK
        table.append(crc)
    return tuple(table)


_TABLE = _make_table()


def _length_bytes(n: int) -> bytes:
    """The length as POSIX feeds it: least significant byte first, no zero bytes past the top."""
    out = bytearray()
    while n:
        out.append(n & 0xFF)
        n >>= 8
    return bytes(out)


def cksum_reference(data: bytes) -> int:
    """Full 32-bit ``cksum`` value, computed byte by byte from the table."""
    crc = 0
    for b in data + _length_bytes(len(data)):
        crc = ((crc << 8) & _MASK) ^ _TABLE[(crc >> 24) ^ b]
    return ~crc & _MASK


_REVERSE_BITS = bytes(int(f"{i:08b}"[::-1], 2) for i in range(256))


def _reverse32(x: int) -> int:
    return int(f"{x:032b}"[::-1], 2)


def cksum(data: bytes) -> int:
    """Full 32-bit ``cksum`` value at C speed.

    An MSB-first CRC from a zero register equals the bit-mirror of the LSB-first
    (reflected) CRC of the bit-mirrored bytes; ``zlib.crc32(d, 0xFFFFFFFF)`` runs
    the reflected CRC from a zero register and inverts at the end.
    """
    message = (data + _length_bytes(len(data))).translate(_REVERSE_BITS)
    reflected = zlib.crc32(message, _MASK) ^ _MASK
    return ~_reverse32(reflected) & _MASK


_SHORT_LENGTHS = tuple(_length_bytes(n) for n in range(256))
_TRAILER_OF_TOP_BYTE = tuple(f"{~_REVERSE_BITS[b] & 0xFF:02x}" for b in range(256))


def trailer(body: str) -> str:
    """The two lower-case hex digits a sender appends after ``|#``.

    Only the low byte of the result is needed, and the low byte of a 32-bit
    mirror is the mirror of the top byte, so one table lookup replaces the
    full reversal.
    """
    data = body.encode("ascii")
    n = len(data)
    message = (data + (_SHORT_LENGTHS[n] if n < 256 else _length_bytes(n))).translate(_REVERSE_BITS)
    return _TRAILER_OF_TOP_BYTE[(zlib.crc32(message, _MASK) ^ _MASK) >> 24]
