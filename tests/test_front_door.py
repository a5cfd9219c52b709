"""The listener's front door against anyone who can reach it, through a real ``watch --listen``: a flood of
half-sent requests never stops the receiver, a half-sent request is closed after the header timeout, a
body that never ends after the body timeout, and connections over the caps are closed at once."""

from __future__ import annotations

import contextlib
import json
import re
import resource
import selectors
import signal
import socket
import threading

import pytest

from core import Receiver
from core.gateways.config import GatewaysConfig
from core.gateways.door import files_needed
from tests.support.helpers import ROOT
from tests.support.gateway_support import Listening, add_gateway, frames, post
from tests.support.inbox_helpers import drop, wait_for
from tests.support.signing import add_operators

HALF = b"POST /in/x/y HTTP/1.1\r\nHost: x\r\n"  # the headers never end
JSON = {"Content-Type": "application/json"}
UNIT = ROOT / "deploy" / "ussd-console-watch.service"
UNIT_FILES = int(re.search(r"^LimitNOFILE=(\d+)$", UNIT.read_text(), re.M).group(1))


def ledger(home) -> set[str]:
    with Receiver(str(home.db)) as r:
        return {c.frame_id for c in r.cases(limit=10000)}


@contextlib.contextmanager
def file_limit(soft: int):
    """This process's soft open-file limit while a child is started (the child keeps it)."""
    old_soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (old_soft, hard))


def room_for(files: int) -> None:
    """Raise this process's own soft open-file limit so it can hold ``files`` sockets."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < files:
        pytest.skip(f"this test holds {files:,} open files; this process may open {hard:,}")
    if soft < files:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(files, hard), hard))


def half_open(port: int, count: int, source: str, first: bytes = HALF) -> list[socket.socket]:
    """``count`` connections from ``source`` (a loopback address), each sending ``first`` once it is
    connected; all are returned and held, whether the receiver took or closed them."""
    held, selector = [], selectors.DefaultSelector()
    for _ in range(count):
        s = socket.socket()
        s.setblocking(False)
        s.bind((source, 0))
        s.connect_ex(("127.0.0.1", port))
        selector.register(s, selectors.EVENT_WRITE)
        held.append(s)

    def connected() -> bool:
        for key, _events in selector.select(timeout=0.5):
            selector.unregister(key.fileobj)
            with contextlib.suppress(OSError):  # closed at once by the receiver: still held here
                if first:
                    key.fileobj.send(first)
        return not selector.get_map()

    try:
        wait_for(connected, interval=0, what=f"{count} connections from {source}")
    finally:
        selector.close()
    return held


def closed_by_peer(s: socket.socket) -> bool:
    """Whether the other end has closed ``s`` (EOF or reset); never blocks."""
    try:
        return s.recv(65536, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def generic(fid: str, text: str, msg_id: str | None = None) -> bytes:
    return json.dumps({"frame_id": fid, "frame": text, **({"id": msg_id} if msg_id else {})}).encode()


def test_the_shipped_unit_has_room_for_the_default_caps():
    assert files_needed(GatewaysConfig.max_connections) <= UNIT_FILES
    assert GatewaysConfig.max_connections_per_peer < GatewaysConfig.max_connections


def test_a_flood_of_half_sent_requests_never_stops_the_receiver(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    path = add_gateway(home, tmp_path, capsys, "relay", "generic")
    # A long header timeout: the connections the caps let in stay open for the whole test, so the
    # caps alone keep the receiver's files below its limit.
    home.config.write_text("[gateways]\nheader_timeout = 600\n")
    room_for(4000)
    with file_limit(UNIT_FILES):
        w = Listening(home, tmp_path)
    flood: list[socket.socket] = []
    try:
        flood = half_open(w.port, 2000, "127.0.0.2")
        f = frames(6, "door")
        for fid, text in f[:5]:
            status, _headers, body = post(w.base, path, generic(fid, text), JSON)
            assert status == 200, w.stderr()[-3000:]
            assert json.loads(body)["frames"] == [fid]
            assert fid in ledger(home)  # answered after its commit
        drop(home, "door.txt", f"{f[5][0]} {f[5][1]}\n")
        wait_for(lambda: f[5][0] in ledger(home), what="the dropped file taken in")
        assert w.proc.poll() is None, w.stderr()
    finally:
        for s in flood:
            s.close()
    assert w.proc.poll() is None, w.stderr()
    fid, text = frames(1, "after")[0]
    assert post(w.base, path, generic(fid, text), JSON)[0] == 200
    assert w.signal(signal.SIGTERM) == 0
    log = (home.logs / "receiver.log").read_text()
    assert "Too many open files" not in log and "Too many open files" not in w.stderr()


def test_a_half_sent_request_is_closed_after_the_header_timeout(home, tmp_path):
    home.config.write_text("[gateways]\nheader_timeout = 0.5\n")
    w = Listening(home, tmp_path)
    try:
        [s] = half_open(w.port, 1, "127.0.0.1")
        s.settimeout(60)
        try:
            assert s.recv(65536) == b""  # closed by the receiver, with no answer
        except ConnectionResetError:
            pass
        s.close()
        assert w.proc.poll() is None
    finally:
        assert w.signal(signal.SIGTERM) == 0


def test_a_body_that_never_ends_is_answered_408_after_the_body_timeout(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    path = add_gateway(home, tmp_path, capsys, "relay", "generic")
    home.config.write_text("[gateways]\nbody_timeout = 0.5\n")
    fid, text = frames(1, "slow")[0]
    body = generic(fid, text)
    w = Listening(home, tmp_path)
    try:
        s = socket.create_connection(("127.0.0.1", w.port), timeout=60)
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:10])
        answer = b""
        while chunk := s.recv(65536):  # the answer, then the close
            answer += chunk
        s.close()
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert post(w.base, path, body, JSON)[0] == 200  # the whole post, sent at once, is taken
    finally:
        assert w.signal(signal.SIGTERM) == 0
    assert ledger(home) == {fid}


def test_connections_over_either_cap_are_closed_at_once_and_those_held_stay(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    path = add_gateway(home, tmp_path, capsys, "relay", "generic")
    home.config.write_text("[gateways]\nheader_timeout = 600\nmax_connections = 4\nmax_connections_per_peer = 2\n")
    w = Listening(home, tmp_path)
    try:
        first = half_open(w.port, 3, "127.0.0.2")  # the third is over the per-peer cap
        wait_for(lambda: closed_by_peer(first[2]), what="the third connection from one address closed")
        second = half_open(w.port, 3, "127.0.0.3")  # the third is over the total
        wait_for(lambda: closed_by_peer(second[2]), what="a fifth connection closed")
        held = first[:2] + second[:2]
        assert not any(closed_by_peer(s) for s in held)  # the four within the caps are still open
        fid, text = frames(1, "cap")[0]
        assert post(w.base, path, generic(fid, text), JSON)[0] == 0  # the door is full: no answer
        for s in first + second:
            s.close()
        wait_for(lambda: post(w.base, path, generic(fid, text), JSON)[0] == 200, what="a post taken again")
    finally:
        assert w.signal(signal.SIGTERM) == 0
    log = (home.logs / "receiver.log").read_text()
    assert re.search(r"gateways listener: \d+ connections closed at once in \d+ s "
                     r"\(\d+ over max_connections, 1 over max_connections_per_peer\)", log), log


def test_running_out_of_open_files_is_a_fault_that_clears_and_never_the_end_of_watch(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    path = add_gateway(home, tmp_path, capsys, "relay", "generic")
    w = Listening(home, tmp_path)
    pid = w.proc.pid
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    log = home.logs / "receiver.log"
    f = frames(3, "nofile")
    answers: list = []
    try:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (0, hard))  # no new file of any kind
        try:
            sender = threading.Thread(target=lambda: answers.append(post(w.base, path, generic(*f[0]), JSON)))
            sender.start()
            drop(home, "nofile.txt", f"{f[1][0]} {f[1][1]}\n")
            wait_for(lambda: w.proc.poll() is not None or all(
                told in log.read_text() for told in ("gateways listener: out of open files",
                                                     "inbox sweep failed: Too many open files")),
                     what="the faults told")
            assert w.proc.poll() is None, w.stderr()
        finally:
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
        sender.join(60)
        assert answers and answers[0][0] == 200, (answers, w.stderr()[-2000:])
        assert f[0][0] in ledger(home)
        wait_for(lambda: f[1][0] in ledger(home), what="the dropped file taken in")
        wait_for(lambda: "fault cleared" in log.read_text() and
                 all(re.search(rf"fault cleared after [\d.]+ s: {what}", log.read_text())
                     for what in ("gateways listener: out of open files", "inbox sweep failed")),
                 what="both faults cleared")
        assert post(w.base, path, generic(*f[2]), JSON)[0] == 200
        assert w.proc.poll() is None
    finally:
        assert w.signal(signal.SIGTERM) == 0


def _watch_once(home, limit: tuple[int, int] | None = None):
    import os
    import subprocess
    import sys

    def limited():
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, limit)

    return subprocess.run([sys.executable, "-m", "console.cli", "watch", "--home", str(home.root), "--no-observer",
                           "--listen", "127.0.0.1:0"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ), preexec_fn=limited)


def test_a_bad_front_door_setting_stops_watch_with_one_line_naming_it(home):
    for setting, named in (("max_connections = 0", "max_connections"), ("max_connections = 1.5", "max_connections"),
                           ("max_connections = 8\nmax_connections_per_peer = 9", "max_connections_per_peer"),
                           ("max_connections_per_peer = true", "max_connections_per_peer"),
                           ("header_timeout = 0", "header_timeout"), ("body_timeout = \"30\"", "body_timeout"),
                           ("header_timeout = inf", "header_timeout")):
        home.config.write_text(f"[gateways]\n{setting}\n")
        run = _watch_once(home)
        last = run.stderr.strip().splitlines()[-1]
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
        assert last.startswith(f"ussd-console: error: [gateways] {named} "), (setting, last)


def test_caps_that_do_not_fit_the_open_file_limit_stop_watch_and_a_limit_that_may_rise_is_raised(home, tmp_path):
    home.config.write_text("[gateways]\nmax_connections = 900\n")
    run = _watch_once(home, (UNIT_FILES, UNIT_FILES))  # as under the unit: no room to rise
    last = run.stderr.strip().splitlines()[-1]
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert "[gateways] max_connections = 900 needs 1,156 open files" in last and "LimitNOFILE" in last, last
    # With a hard limit above what the caps need, watch raises its own soft limit and starts.
    home.config.write_text("[gateways]\nmax_connections = 2000\nmax_connections_per_peer = 2000\n")
    room_for(4000)
    with file_limit(UNIT_FILES):
        w = Listening(home, tmp_path)
    try:
        assert resource.prlimit(w.proc.pid, resource.RLIMIT_NOFILE)[0] == 2256
    finally:
        assert w.signal(signal.SIGTERM) == 0


def test_with_tls_a_handshake_that_never_comes_is_closed_after_the_header_timeout(home, tmp_path, capsys):
    import ssl
    import urllib.request

    from tests.support.gateway_support import self_signed as _self_signed
    from tests.support.watch import Watcher

    add_operators(home, tmp_path, "alice")
    path = add_gateway(home, tmp_path, capsys, "relay", "generic")
    _self_signed(home.root)
    home.config.write_text('[gateways]\nlisten = "127.0.0.1:0"\ntls_cert = "cert.pem"\ntls_key = "key.pem"\n'
                           "header_timeout = 0.5\nmax_connections_per_peer = 2\n")
    fid, text = frames(1, "tls")[0]
    w = Watcher(home, tmp_path, "--no-observer")
    try:
        port = int(re.findall(r"listening on https://127\.0\.0\.1:(\d+)/in/", (home.logs / "receiver.log").read_text())[-1])
        silent = half_open(port, 3, "127.0.0.2", b"")  # not a byte, no handshake; the third is over the cap
        for s in silent:
            wait_for(lambda: closed_by_peer(s), what="a connection with no handshake closed")
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        request = urllib.request.Request(f"https://127.0.0.1:{port}{path}", data=generic(fid, text), headers=JSON)
        with urllib.request.urlopen(request, context=context, timeout=60) as answer:
            assert answer.status == 200
    finally:
        assert w.signal(signal.SIGTERM) == 0
    assert ledger(home) == {fid}


def test_a_peer_is_its_address_or_its_ipv6_64_and_the_door_counts_both_caps():
    from core.gateways.door import Door, peer_of

    assert peer_of(("203.0.113.7", 5000)) == "203.0.113.7"
    assert peer_of(("2001:db8:1:2:aaaa::1", 5000, 0, 0)) == peer_of(("2001:db8:1:2:ffff::9", 1, 0, 0)) \
        == "2001:db8:1:2::/64"
    assert peer_of(("::ffff:198.51.100.4", 1, 0, 0)) == "198.51.100.4"
    door = Door(total=3, per_peer=2)
    assert [door.admit("a"), door.admit("a"), door.admit("a")] == [None, None, "max_connections_per_peer"]
    assert [door.admit("b"), door.admit("c")] == [None, "max_connections"]
    door.leave("a")
    assert door.admit("c") is None and door.held == 3
    assert door.summary(60) == ("gateways listener: 2 connections closed at once in 60 s "
                                "(1 over max_connections, 1 over max_connections_per_peer); 3 held now")
    assert door.summary(60) is None
