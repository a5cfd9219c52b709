"""An alert URL's secrets (its password, its ``?token=``) stay in config.toml (docs/serve-security.md):
the log, stderr, ``status --json``, ``alerts --json``, the store and the fault event sent to the
other target show the URL masked, through the real ``watch`` and CLI."""

from __future__ import annotations

import base64
import http.server
import json
import signal
import sqlite3
import subprocess
import sys
import threading

from tests.support.alert_targets import CommandTarget, conflict_file, configure, deliveries
from tests.support.helpers import ROOT
from tests.support.inbox_helpers import drop, wait_for
from tests.support.watch import Watcher
from tests.support.cli import Ran, run_cli

PASSWORD = "Hook-Pa55word-x"
TOKEN = "Tok3n-secret-value"
SECRETS = (PASSWORD, TOKEN, f"hookuser:{PASSWORD}")


def secret_url(base: str) -> str:
    scheme, rest = base.split("://", 1)
    return f"{scheme}://hookuser:{PASSWORD}@{rest}?token={TOKEN}&camp=kakuma"


def cli(home, *args: str) -> Ran:
    return run_cli("--home", str(home.root), *args)


def store_dump(home) -> str:
    con = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True, timeout=60)
    try:
        return "\n".join(con.iterdump())
    finally:
        con.close()


def leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def test_a_failing_secret_url_is_masked_in_log_stderr_status_alerts_the_store_and_the_fault_event(home, tmp_path,
                                                                                                 refused_url):
    target = CommandTarget(tmp_path / "target")
    url = secret_url(refused_url)
    configure(home, command=target.argv, url=url, retry_first=0.1, retry_cap=1.0, fault_after=5.0)
    watcher = Watcher(home, tmp_path)
    try:
        drop(home, "session.txt", conflict_file("s1"))
        faults = lambda: [e for e in target.delivered() if e["kind"] == "fault"]  # noqa: E731
        [fault] = wait_for(faults, what="the url target's fault told through the command target")
        # watch records its faults for `status` on its own tick, a moment after telling them
        status = wait_for(lambda: (done := cli(home, "status", "--json")).returncode == 0
                          and "alert target url failing" in done.stdout and done, interval=0.5,
                          what="the fault in status")
        alerts = cli(home, "alerts", "--json")
        shown = cli(home, "alerts")
    finally:
        assert watcher.signal(signal.SIGTERM) == 0
    assert "alert target url failing" in fault["summary"] + json.dumps(fault["details"])
    failed = [r for r in deliveries(home) if r["target"] == "url" and r["last_error"]]
    assert failed and "cannot reach http://***@127.0.0.1:" in failed[0]["last_error"]
    assert "token=***&camp=***" in failed[0]["last_error"]  # still says which address: only secrets go
    assert status.returncode == 0 and "alert target url failing" in status.stdout
    assert alerts.returncode == 0 and shown.returncode == 0
    log = (home.logs / "receiver.log").read_text()
    assert "cannot reach http://***@" in log
    for where, text in {"log": log, "stderr": watcher.stderr(), "status --json": status.stdout,
                        "alerts --json": alerts.stdout, "alerts": shown.stdout + shown.stderr,
                        "the store": store_dump(home), "the command target": json.dumps(target.delivered())}.items():
        assert leaks(text) == [], where
    assert PASSWORD in home.config.read_text()  # the one place it lives


class Recorder(http.server.BaseHTTPRequestHandler):
    """A hook that answers 204 and keeps each request's path, headers and body."""

    seen: list[tuple[str, dict, bytes]] = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.seen.append((self.path, dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_userinfo_is_sent_as_basic_auth_and_token_file_as_a_bearer_header(home, tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Recorder.seen = []
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/hooks/ussd"
        configure(home, url=secret_url(base))
        done = cli(home, "alerts", "test")
        assert done.returncode == 0, done.stderr
        assert "url (http://***@127.0.0.1:" in done.stdout and leaks(done.stdout + done.stderr) == []
        [(path, headers, body)] = Recorder.seen
        assert path == f"/hooks/ussd?token={TOKEN}&camp=kakuma"
        assert headers["Authorization"] == "Basic " + base64.b64encode(f"hookuser:{PASSWORD}".encode()).decode()
        assert json.loads(body)["kind"] == "test"
        (home.root / "hook-token").write_text("Bearer-s3cret-from-a-file\n")
        configure(home, url=base, token_file="hook-token")
        home.config.write_text(home.config.read_text() + 'headers = { "X-Hook-Camp" = "kakuma" }\n')
        done = cli(home, "alerts", "test")
        assert done.returncode == 0, done.stderr
        headers = Recorder.seen[-1][1]
        assert headers["Authorization"] == "Bearer Bearer-s3cret-from-a-file" and headers["X-Hook-Camp"] == "kakuma"
        assert "Bearer-s3cret" not in done.stdout + done.stderr
    finally:
        server.shutdown()
        server.server_close()


def test_a_bad_url_or_token_file_is_one_line_that_shows_no_secret(home, tmp_path):
    configure(home, url=f"ftp://hookuser:{PASSWORD}@127.0.0.1/x?token={TOKEN}")
    done = cli(home, "alerts", "test")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "http:// or https://" in done.stderr
    assert leaks(done.stderr) == [] and "ftp://***@127.0.0.1/x?token=***" in done.stderr
    watcher = subprocess.run([sys.executable, "-m", "console.cli", "watch", "--home", str(home.root)],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert watcher.returncode == 2 and leaks(watcher.stderr) == []
    configure(home, url="http://127.0.0.1:9/hook", token_file="no-such-token")
    done = cli(home, "alerts", "test")
    assert done.returncode == 2 and "token_file" in done.stderr and "cannot read" in done.stderr


def test_mask_url_keeps_the_address_and_hides_every_secret_piece():
    from core.urls import mask_in, mask_url

    assert mask_url("https://hooks.example/ussd") == "https://hooks.example/ussd"
    assert mask_url("http://u:p%40ss@[::1]:9000/h?token=a%20b&flag#frag") == "http://***@[::1]:9000/h?token=***&flag=***#***"
    assert mask_url("postgresql://postgres:pw@/postgres?host=/run/pg") == "postgresql://***@/postgres?host=***"
    assert mask_url("http://u:p@host:99999/x") == "http://***"  # does not parse: masked whole
    said = "cannot connect to p@ss (u:p%40ss) with a%20b and a b"
    assert mask_in(said, "http://u:p%40ss@h/?t=a%20b") == "cannot connect to *** (***) with *** and ***"
