"""``serve``'s browser sessions end with it: after SIGTERM (or Ctrl-C) no console process it
started for a session is left running. Through the real ``ussd-console serve`` process and a
real web socket session."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from pathlib import Path

import pytest

from core.home import Home
from tests.support.serve import DRAWN, Serve, descendants, own, ws_session
from tests.support.waiting import until, wait_for
from tools.sample_store import build


@pytest.fixture
def sample_home(tmp_path):
    return build(Home(tmp_path / "home")).root


def alive(pid: int) -> bool:
    """Running, and not a zombie waiting for its parent to read its exit."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def listening(port: int) -> bool:
    """serve prints its banner as it starts; the port takes connections a moment later."""
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def sessions_open(server: Serve, count: int, stop_signal: int) -> tuple[list[int], list[bytes], bytes]:
    """Open ``count`` sessions, wait until each has drawn the console, then send serve
    ``stop_signal`` while they are still open; serve's child processes, their command lines
    and the first session's drawing."""

    wait_for(lambda: listening(server.port), what="serve's port to take connections")

    async def scenario():
        hold = asyncio.Event()
        drawn = [asyncio.Event() for _ in range(count)]
        tasks = [asyncio.create_task(ws_session(server.url, headers=own(server.url), hold=hold, drawn=d))
                 for d in drawn]
        await asyncio.wait_for(asyncio.gather(*(d.wait() for d in drawn)), 90)
        pids = descendants(server.proc.pid)
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids]
        server.proc.send_signal(stop_signal)  # with the browsers still connected, until serve is gone
        await until(lambda: server.proc.poll() is not None, what=f"serve to end on {stop_signal.name}")
        hold.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        return pids, commands, results[0]

    return asyncio.run(scenario())


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL],
                         ids=["SIGTERM", "SIGINT", "SIGKILL"])
def test_the_session_processes_end_with_serve(sample_home, tmp_path, stop_signal):
    server = Serve(sample_home, tmp_path, "--max-sessions", "2")
    pids: list[int] = []
    commands: list[bytes] = []
    try:
        pids, commands, drawn = sessions_open(server, 2, stop_signal)
        assert isinstance(drawn, bytes) and DRAWN in drawn
        assert sum(b"console.cli" in c and b"console\0--no-inbox" in c for c in commands) >= 2, commands
        wait_for(lambda: server.proc.poll() is not None, what="serve to stop")
        wait_for(lambda: not [pid for pid in pids if alive(pid)],
                 what=f"every session process of serve to end: {[p for p in pids if alive(p)]}")
        assert server.proc.returncode in (0, -stop_signal), server.output()
        assert "Traceback" not in server.output(), server.output()
    finally:
        for pid, command in zip(pids, commands):  # a failed run leaves nothing behind (only ours)
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/cmdline").read_bytes() == command:
                    os.kill(pid, signal.SIGKILL)
        server.stop()
