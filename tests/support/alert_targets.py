"""Alert targets for the tests: a real command that fails on cue, and an HTTP server that never answers.

A refused address is the `refused_url` fixture (tests/support/ports.py): a port bound and never
listened on, held for the test's life."""

from __future__ import annotations

import json
import socket
import sys
import threading
from pathlib import Path

from core import Receiver
from core.store import outbox
from tests.support.helpers import frame
from tests.support.inbox_helpers import text_of

# Run as `python alert_target.py STATE_DIR FAIL_FIRST`: every call is logged with its event id; the
# first FAIL_FIRST calls, and every call while STATE_DIR/block exists, fail (exit 1); others append
# the event to STATE_DIR/delivered.jsonl and exit 0.
SCRIPT = r'''
import json, os, sys
state, fail_first = sys.argv[1], int(sys.argv[2])
event = json.loads(sys.stdin.read())
calls = os.path.join(state, "calls.log")
with open(calls, "a") as fh:
    fh.write(event["event_id"] + "\n")
with open(calls) as fh:
    n = len(fh.read().splitlines())
if n <= fail_first or os.path.exists(os.path.join(state, "block")):
    print("target not ready (call %d)" % n, file=sys.stderr)
    sys.exit(1)
with open(os.path.join(state, "delivered.jsonl"), "a") as fh:
    fh.write(json.dumps(event) + "\n")
'''


class CommandTarget:
    def __init__(self, folder: Path, fail_first: int = 0, blocked: bool = False):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.script = folder / "alert_target.py"
        self.script.write_text(SCRIPT)
        self.fail_first = fail_first
        if blocked:
            self.block()

    @property
    def argv(self) -> list[str]:
        return [sys.executable, str(self.script), str(self.folder), str(self.fail_first)]

    def block(self) -> None:
        (self.folder / "block").write_text("")

    def unblock(self) -> None:
        (self.folder / "block").unlink()

    def calls(self) -> list[str]:
        path = self.folder / "calls.log"
        return path.read_text().splitlines() if path.exists() else []

    def delivered(self) -> list[dict]:
        path = self.folder / "delivered.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class SilentServer:
    """Accepts connections, reads each request and never answers (until ``close``)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hooks/ussd"
        self.requests: list[bytes] = []
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.open.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        data = b""
        try:
            while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            return
        with self.lock:
            self.requests.append(data)

    def event_ids(self) -> list[str]:
        with self.lock:
            bodies = [r.split(b"\r\n\r\n", 1)[1] for r in self.requests if b"\r\n\r\n" in r]
        return [json.loads(b)["event_id"] for b in bodies if b.strip()]

    def close(self) -> None:
        self.sock.close()
        for conn in self.open:
            conn.close()


def conflict_file(tag: str) -> str:
    """One case sent twice under one frame id with different counts: the second is a conflict."""
    return text_of([f"{tag}-1 {frame(1, 'Kakuma1', 'MED', 3, 86)}", f"{tag}-1 {frame(1, 'Kakuma1', 'MED', 9, 86)}"])


def configure(home, **alerts) -> None:
    lines = ["[inbox]", "sweep_interval = 0.2", "settle_time = 0.1", "[alerts]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in alerts.items()]
    home.config.write_text("\n".join(lines) + "\n")


def deliveries(home, state=None) -> list[dict]:
    with Receiver(str(home.db)) as r:
        return outbox.listing(r.db, state=state, limit=1000)


def conflicts(home) -> int:
    with Receiver(str(home.db)) as r:
        return r.totals().conflicts_open
