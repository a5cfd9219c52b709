"""``ussd-console serve`` for a test: started on a port it binds itself, its output in a file; requests and
web-socket sessions against it; the processes under it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp

from tests.support.helpers import ROOT
from tests.support.waiting import wait_for
from tools.browser_shot import SERVING


DRAWN = b"USSD console"


class Serve:
    """``ussd-console serve`` in a subprocess on a loopback port it binds itself (``--port 0``, read back from
    the line it prints once listening), its output in a file."""

    def __init__(self, home: Path, tmp_path: Path, *flags: str, env: dict[str, str] | None = None):
        self.out_path = tmp_path / f"serve-{len(list(tmp_path.glob('serve-*.txt')))}.txt"
        self._out = open(self.out_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "console.cli", "--home", str(home), "serve", "--port", "0", *flags],
            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=self._out, stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})})
        wait_for(lambda: self.proc.poll() is not None or "serving the console at" in self.output(),
                 what="serve to listen")
        assert self.proc.poll() is None, self.output()
        self.port = int(SERVING.search(self.output()).group(2))
        self.url = f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        self._out.flush()
        return self.out_path.read_text()

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        return self.out_path.read_text()


@contextlib.contextmanager
def serving(home, tmp_path, *flags, env=None):
    server = Serve(home, tmp_path, *flags, env=env)
    try:
        yield server
    finally:
        server.stop()


async def fetch(url: str, headers=None, cookies=None, data=None):
    async with aiohttp.ClientSession(cookies=cookies) as session:
        method = session.post if data is not None else session.get
        async with method(url, headers=headers or {}, data=data, allow_redirects=False) as reply:
            return reply.status, await reply.text(), dict(reply.headers), reply.cookies


def get(url: str, **kw):
    return asyncio.run(fetch(url, **kw))


async def ws_session(url: str, headers=None, cookies=None, hold: asyncio.Event | None = None, drawn=None):
    """Open the console's web socket; returns what it drew, or the refusal's HTTP status."""
    async with aiohttp.ClientSession(cookies=cookies) as session:
        try:
            ws = await session.ws_connect(f"{url}/ws?width=100&height=30", headers=headers or {})
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status
        received = b""
        try:
            async with asyncio.timeout(90):
                while DRAWN not in received:
                    message = await ws.receive()
                    if message.type == aiohttp.WSMsgType.BINARY:
                        received += message.data
                    elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                        break
            if drawn is not None:
                drawn.set()
            if hold is not None:
                await hold.wait()
        finally:
            await ws.close()
        return received


def session(url: str, **kw):
    return asyncio.run(ws_session(url, **kw))


def own(url: str) -> dict[str, str]:
    return {"Origin": url}


def descendants(pid: int) -> list[int]:
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
