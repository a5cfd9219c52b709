"""Gateway intake figures for ``make bench``: single-frame posts a second to a real ``watch --listen``
on loopback, from one client and from 32 concurrent clients, and the p99 post-to-answer latency.

Run alone: ``python -m tests.bench_gateways [--posts N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.rules.cksum import trailer  # noqa: E402


def _frame(i: int) -> str:
    body = f"H1|1|S{i % 100000}|MED|{1 + i % 500}|{i % 100}"
    return f"{body}|#{trailer(body)}"


def _setup(home: Path) -> str:
    """A home with one operator and one generic gateway; the gateway's path."""
    from console.cli import main

    pw = home.parent / "alice.pass"
    pw.write_text("alice passphrase\n")
    pw.chmod(0o600)
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        assert main(["--home", str(home), "operator", "add", "alice", "--passphrase-file", str(pw)]) == 0
    out = home.parent / "gateway.json"
    code = subprocess.run([sys.executable, "-m", "console.cli", "--home", str(home), "--json", "gateway", "add",
                           "bench", "--kind", "generic", "--operator", "alice", "--passphrase-file", str(pw),
                           "--reason", "bench"], cwd=ROOT, stdout=open(out, "w"), stderr=subprocess.DEVNULL).returncode
    assert code == 0
    return json.loads(out.read_text())["path"]


def _start(home: Path) -> tuple[subprocess.Popen, int]:
    log = home / "logs" / "receiver.log"
    proc = subprocess.Popen([sys.executable, "-m", "console.cli", "watch", "--home", str(home), "--listen",
                             "127.0.0.1:0"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.findall(r"listening on http://127\.0\.0\.1:(\d+)/in/", log.read_text()) if log.exists() else []
        if found:
            return proc, int(found[-1])
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("watch --listen did not start")


async def _post_over(reader, writer, host: str, path: str, body: bytes) -> int:
    """One keep-alive HTTP/1.1 POST on an open connection; the answer's status (its body is read)."""
    writer.write(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line[:15].lower() == b"content-length:"), 0)
    if length:
        await reader.readexactly(length)
    return status


async def _run(url: str, clients: int, posts: int, start: int) -> tuple[float, list[float]]:
    """``clients`` connections posting one frame at a time, each post sent when the last was answered.

    A minimal keep-alive client on asyncio's streams rather than aiohttp's: the clients share these
    two cores with the listener, and aiohttp's client spent about half as much CPU a post as the
    listener itself, which the figure would have counted against the listener (real gateways post
    from elsewhere)."""
    from urllib.parse import urlsplit

    where = urlsplit(url)
    latencies: list[float] = []
    counter = iter(range(start, start + posts))

    async def client():
        reader, writer = await asyncio.open_connection(where.hostname, where.port)
        try:
            for i in counter:
                body = json.dumps({"frame_id": f"b{i}-1", "frame": _frame(i)}).encode()
                t = time.perf_counter()
                status = await _post_over(reader, writer, where.netloc, where.path, body)
                assert status == 200, status
                latencies.append(time.perf_counter() - t)
        finally:
            writer.close()

    t = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - t
    return posts / wall, latencies


def _p99(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * 0.99))] * 1000


def measure_gateway_intake(posts: int = 2000) -> dict:
    """Posts a second and p99 latency (ms) from 1 and from 32 concurrent clients."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        path = _setup(home)
        proc, port = _start(home)
        try:
            url = f"http://127.0.0.1:{port}{path}"
            asyncio.run(_run(url, 4, 200, 10_000_000))  # warm-up
            one_rate, one_lat = asyncio.run(_run(url, 1, max(200, posts // 4), 0))
            many_rate, many_lat = asyncio.run(_run(url, 32, posts, 1_000_000))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    return {"one": one_rate, "one_p99_ms": _p99(one_lat), "many": many_rate, "many_p99_ms": _p99(many_lat),
            "posts": posts}


def report(res: dict) -> None:
    print(f"gateway posts, 1 client:    {res['one']:>10,.0f} posts/s  (p99 {res['one_p99_ms']:.1f} ms)")
    print(f"gateway posts, 32 clients:  {res['many']:>10,.0f} posts/s  (p99 {res['many_p99_ms']:.1f} ms; "
          f"{res['many'] / res['one']:.1f}x one client; {res['posts']:,} single-frame posts, each answered after "
          "its commit)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--posts", type=int, default=4000)
    report(measure_gateway_intake(ap.parse_args().posts))
    os._exit(0)
