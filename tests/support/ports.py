"""Addresses that stay the test's own for as long as it needs them.

A refused address is a socket bound and never listened on, held until the test ends: a
connection to it is refused at once, and no other test's server can be given that port in the
meantime (binding, closing and handing the number out would let one take it first). A server
under test binds port 0 itself and the test reads the port back.
"""

from __future__ import annotations

import socket

import pytest


class RefusedAddress:
    """A loopback port bound and never listened on: every connection to it is refused."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]

    def url(self, path: str = "/hooks/ussd") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def refused_url():
    """An alert target's URL where every connection is refused, the port held for the test's life."""
    address = RefusedAddress()
    try:
        yield address.url()
    finally:
        address.close()
