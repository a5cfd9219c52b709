"""The listener's front door: how many connections it holds, and how long one may take to say what it wants.

Every connection is an open file, and a process out of files can neither take a
post nor read its inbox. So the door counts the connections it holds, in total
(``max_connections``) and per peer (``max_connections_per_peer``; an IPv6 peer
is its /64, what one host usually has), and closes a connection over either cap
the moment it is accepted (an abort: no answer, no lingering file). The caps
sit below the process's open-file limit (``fit_file_limit``, checked at start).

The ``Gate`` accepts on the listening socket itself rather than through
``loop.create_server``: asyncio's server accepts up to its backlog in one turn
of the loop and makes each transport later, so a flood held a thousand files
before any cap could look at one. Here a connection over a cap is closed right
after ``accept``, with nothing made of it; one admitted becomes a transport
(``connect_accepted_socket``, the TLS handshake under ``header_timeout``, still
counted while it runs) whose protocol is a ``Guard``: aiohttp's own protocol
inside, and the count given back when the connection ends. aiohttp bounds the
headers: its keep-alive timer runs from the connection's start and from each
answer, and closes a connection still waiting for a whole request when it
fires; the listener sets it to ``header_timeout``. The body's deadline is the
handler's (``body_timeout``).
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import resource
import socket
import ssl
from collections import Counter

from core.i18n import N_

log = logging.getLogger("ussd.gateways")

FILES_BESIDE = 256  # open files kept for the rest of watch: the store, the inbox, logs, alerts, backups
OUT_OF_FILES = frozenset({errno.EMFILE, errno.ENFILE})
FAULT_KEY = "gateways listener"
ACCEPT_BATCH = 64  # connections accepted in one turn of the loop, before their handlers run
RETRY_ACCEPT = 1.0  # seconds before accepting again after running out of files


def peer_of(peername) -> str:
    """What the per-peer cap counts: an IPv4 address, or an IPv6 address's /64 network."""
    host = peername[0] if isinstance(peername, (tuple, list)) and peername else str(peername or "?")
    try:
        address = ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return str(host)
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


class Door:
    """The connections held, in total and per peer, and those turned away since the last summary
    (pure counting; the listener's event loop alone uses it)."""

    def __init__(self, total: int, per_peer: int):
        self.total, self.per_peer = total, per_peer
        self.held = 0
        self.by_peer: Counter = Counter()
        self.turned_away: Counter = Counter()  # the cap that closed them -> how many

    def admit(self, peer: str) -> str | None:
        """None when the connection may stay (it is counted), else the cap it is over."""
        if self.held >= self.total:
            over = "max_connections"
        elif self.by_peer[peer] >= self.per_peer:
            over = "max_connections_per_peer"
        else:
            self.held += 1
            self.by_peer[peer] += 1
            return None
        self.turned_away[over] += 1
        return over

    def leave(self, peer: str) -> None:
        self.held -= 1
        left = self.by_peer[peer] - 1
        if left > 0:
            self.by_peer[peer] = left
        else:
            del self.by_peer[peer]

    def summary(self, seconds: float) -> str | None:
        """The log's line on connections closed at once since the last one (None: there were none)."""
        if not self.turned_away:
            return None
        total = sum(self.turned_away.values())
        why = ", ".join(f"{n:,} over {cap}" for cap, n in sorted(self.turned_away.items()))
        self.turned_away.clear()
        return (f"gateways listener: {total:,} connection{'s' if total != 1 else ''} closed at once in "
                f"{seconds:.0f} s ({why}); {self.held:,} held now")


class Gate:
    """The door's shell on the listener's loop: accepts on the listening socket itself, closes a
    connection over a cap before anything is made of it, hands the others to aiohttp, and turns an
    out-of-files error into a fault that clears."""

    def __init__(self, door: Door, inner_factory, tls: ssl.SSLContext | None, header_timeout: float,
                 faults=None):
        self.door = door
        self.inner_factory = inner_factory
        self.tls = tls
        self.header_timeout = header_timeout
        self.faults = faults
        self.guards: set[Guard] = set()
        self.out_of_files = False
        self._sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._retry: asyncio.TimerHandle | None = None
        self._opening: set[asyncio.Task] = set()  # admitted, transport (and TLS handshake) under way

    # -- the listening socket ---------------------------------------------------------------
    def listen(self, loop: asyncio.AbstractEventLoop, host: str, port: int, backlog: int = 1024) -> tuple[str, int]:
        """Bind and start accepting on ``loop`` (called on its thread); the address bound."""
        family, kind, proto, _name, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                                 flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._loop = loop
        loop.add_reader(sock.fileno(), self._accept)
        return sock.getsockname()[:2]

    def stop_accepting(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if self._sock is not None:
            self._loop.remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None

    def abort_all(self) -> None:
        """At a stop, after aiohttp has answered and closed its own: what it never saw (a TLS
        handshake under way) is closed here."""
        for task in list(self._opening):
            task.cancel()
        for guard in list(self.guards):
            guard.abort()

    def _accept(self) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                conn, address = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in OUT_OF_FILES:  # the kernel keeps the connection queued; try again soon
                    self.ran_out_of_files(exc)
                    self._loop.remove_reader(self._sock.fileno())
                    self._retry = self._loop.call_later(RETRY_ACCEPT, self._resume)
                    return
                log.debug("gateways listener: accept failed: %s", exc)  # the peer gave up meanwhile
                continue
            self.admitted()
            peer = peer_of(address)
            if self.door.admit(peer) is not None:
                conn.close()  # over a cap: its file is given back now, nothing is read or answered
                continue
            task = self._loop.create_task(self._open(conn, peer))
            self._opening.add(task)
            task.add_done_callback(self._opening.discard)

    def _resume(self) -> None:
        self._retry = None
        if self._sock is not None:
            self._loop.add_reader(self._sock.fileno(), self._accept)

    async def _open(self, conn: socket.socket, peer: str) -> None:
        guard = Guard(self, peer)
        self.guards.add(guard)
        try:
            await self._loop.connect_accepted_socket(
                lambda: guard, conn, ssl=self.tls,
                ssl_handshake_timeout=self.header_timeout if self.tls is not None else None)
        except (OSError, ssl.SSLError, asyncio.TimeoutError, ConnectionError) as exc:
            log.debug("gateways listener: a connection ended before its first request: %s", exc)
            conn.close()
            guard.release()  # no connection_lost comes for a handshake that failed

    # -- running out of files -------------------------------------------------------------------
    def admitted(self) -> None:
        """A connection was accepted: files are there again."""
        if self.out_of_files:
            self.out_of_files = False
            if self.faults is not None:
                self.faults.clear(FAULT_KEY)

    def ran_out_of_files(self, exc: OSError) -> None:
        """Accepting or answering met the open-file limit: a fault until a connection is accepted again
        (safe from any thread)."""
        self.out_of_files = True
        message = (f"{FAULT_KEY}: out of open files ({exc.strerror or exc}; the limit is {file_limit()}); "
                   "new connections wait until some close")
        if self.faults is not None:
            self.faults.report(FAULT_KEY, message)
        else:
            log.warning("%s", message)


class Guard(asyncio.Protocol):
    """One admitted connection: aiohttp's protocol's, counted by the door until it is lost."""

    def __init__(self, gate: Gate, peer: str):
        self.gate = gate
        self.peer: str | None = peer
        self.inner: asyncio.Protocol | None = None
        self.transport: asyncio.BaseTransport | None = None

    def release(self) -> None:
        if self.peer is not None:
            self.gate.door.leave(self.peer)
            self.peer = None
            self.gate.guards.discard(self)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.inner = self.gate.inner_factory()
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.data_received(data)

    def eof_received(self):
        return self.inner.eof_received() if self.inner is not None else None

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    def connection_lost(self, exc) -> None:
        self.release()
        inner, self.inner = self.inner, None
        if inner is not None:
            inner.connection_lost(exc)


def file_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def files_needed(max_connections: int) -> int:
    return max_connections + FILES_BESIDE


def fit_file_limit(max_connections: int) -> tuple[str, dict] | None:
    """Raise this process's soft open-file limit to what ``max_connections`` needs, if the hard limit
    allows; the reason it cannot, for the one error line (a marked message and its values), else None."""
    need = files_needed(max_connections)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return None
    if hard == resource.RLIM_INFINITY or hard >= need:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
            return None
        except (OSError, ValueError):
            pass
    return (N_("[gateways] max_connections = %(most)s needs %(need)s open files (%(beside)s beside the "
               "connections), but this process may open %(soft)s (LimitNOFILE= in the unit, or ulimit -n): "
               "lower max_connections or raise the limit"),
            {"most": f"{max_connections:,}", "need": f"{need:,}", "beside": FILES_BESIDE, "soft": f"{soft:,}"})
