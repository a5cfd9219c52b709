"""``python -m tools.browser_shot``: the console as a browser shows it, through ``ussd-console serve``.

Runs ``serve`` on a free loopback port over the sample store, opens the page
in Debian's headless Chromium driven over the DevTools protocol (through
aiohttp's web-socket client, which textual-serve already brings), waits until
the console has drawn (its header and totals have reached the page over the
console's web socket, and the page has painted twice since), and saves a PNG.
Chromium runs with every host name but the loopback mapped to nowhere, and
every request the page makes is recorded, so a caller can check the page
fetched nothing from outside the machine. ``make screenshots`` writes
``screenshots/browser.png``; tests/test_browser.py runs the same steps.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What the console's first drawing carries: the header's title and its totals line.
DRAWN = (b"USSD console", b"cases ")
WINDOW = (1000, 640)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


def _end(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


SERVING = re.compile(r"listening on (\S+):(\d+);")  # in the line serve prints once listening


@contextlib.contextmanager
def served(home: Path, log: Path, timeout: float = 60.0):
    """``ussd-console serve`` on a port it picks itself (``--port 0``) until the block ends; yields its URL,
    read back from the line serve prints once it listens."""
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "console.cli", "--home", str(home), "serve", "--port", "0"],
                                cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            found = _wait(lambda: proc.poll() is not None or SERVING.search(log.read_text()), timeout,
                          "serve to listen")
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited with {proc.returncode}: {log.read_text()[-2000:]}")
            yield f"http://127.0.0.1:{found.group(2)}/"
        finally:
            _end(proc)


@dataclass
class Capture:
    requests: list[str] = field(default_factory=list)  # every URL the page asked for (HTTP and web socket)
    received: bytes = b""  # what came over the console's web socket
    html: str = ""


@contextlib.contextmanager
def _browser(chromium: str, timeout: float):
    profile = tempfile.mkdtemp(prefix="ussd-chromium-")
    proc = subprocess.Popen([
        chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
        f"--window-size={WINDOW[0]},{WINDOW[1]}", f"--user-data-dir={profile}", "--remote-debugging-port=0",
        "about:blank",
    ], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        active = Path(profile) / "DevToolsActivePort"
        _wait(lambda: proc.poll() is not None or (active.exists() and len(active.read_text().split()) >= 2),
              timeout, "Chromium's DevTools port")
        if proc.poll() is not None:
            raise RuntimeError(f"chromium exited with {proc.returncode}")
        yield int(active.read_text().split()[0])
    finally:
        _end(proc)
        shutil.rmtree(profile, ignore_errors=True)


class _Page:
    """A minimal DevTools client: commands with ids, events into a list."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future] = {}
        self.events: list[dict] = []
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for message in self.ws:
            data = json.loads(message.data)
            if "id" in data and data["id"] in self.waiting:
                self.waiting.pop(data["id"]).set_result(data)
            elif "method" in data:
                self.events.append(data)

    async def call(self, method: str, **params) -> dict:
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        await self.ws.send_str(json.dumps({"id": self.next_id, "method": method, "params": params}))
        reply = await asyncio.wait_for(future, 60)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    async def evaluate(self, expression: str):
        result = await self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        return result.get("result", {}).get("value")


def _record(page: _Page, capture: Capture) -> None:
    for event in page.events:
        method, params = event["method"], event.get("params", {})
        if method == "Network.requestWillBeSent":
            capture.requests.append(params["request"]["url"])
        elif method == "Network.webSocketCreated":
            capture.requests.append(params["url"])
        elif method == "Network.webSocketFrameReceived":
            frame = params["response"]
            data = frame["payloadData"]
            capture.received += base64.b64decode(data) if frame.get("opcode") == 2 else data.encode()
    page.events.clear()


async def _capture(url: str, png: Path, chromium: str, timeout: float) -> Capture:
    import aiohttp

    capture = Capture()
    with _browser(chromium, timeout) as port:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as reply:
                pages = [t for t in await reply.json(content_type=None) if t.get("type") == "page"]
            async with session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                page = _Page(ws)
                await page.call("Network.enable")
                await page.call("Page.enable")
                await page.call("Page.navigate", url=url)
                deadline = time.monotonic() + timeout
                while True:
                    _record(page, capture)
                    started = await page.evaluate("document.body && document.body.classList.contains('-first-byte')")
                    if started and all(marker in capture.received for marker in DRAWN):
                        break
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"the console did not draw within {timeout:g} s "
                                           f"({len(capture.received)} bytes received)")
                    await asyncio.sleep(0.1)
                # xterm.js paints on animation frames: two frames after the bytes arrived, they are on screen.
                await page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                shot = await page.call("Page.captureScreenshot", format="png")
                png.parent.mkdir(parents=True, exist_ok=True)
                png.write_bytes(base64.b64decode(shot["data"]))
                capture.html = await page.evaluate("document.documentElement.outerHTML")
                _record(page, capture)
                page.reader.cancel()
    return capture


def capture(url: str, png: Path, chromium: str, timeout: float = 90.0) -> Capture:
    """Open ``url`` in headless Chromium, wait for the console to draw, save ``png``."""
    return asyncio.run(_capture(url, png, chromium, timeout))


def main(argv: list[str] | None = None) -> int:
    import argparse

    from core.home import Home

    from .sample_store import build

    parser = argparse.ArgumentParser(prog="python -m tools.browser_shot", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "screenshots" / "browser.png"))
    args = parser.parse_args(argv)
    chromium = find_chromium()
    if chromium is None:
        print("chromium not found (Debian: apt-get install chromium, or scripts/ensure-chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="ussd-browser-") as tmp:
        home = build(Home(Path(tmp) / "home"))
        with served(home.root, Path(tmp) / "serve.log") as url:
            capture(url, Path(args.out), chromium)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
