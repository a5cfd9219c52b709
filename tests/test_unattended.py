"""Running unattended (docs/rules.md#running-unattended): systemd's notify protocol, health for scripts, the metrics file,
rotated logs."""

from __future__ import annotations

import json
import logging
import signal
import socket

import pytest
from prometheus_client.parser import text_string_to_metric_families

from core import Receiver
from core.ops.logfile import RotatingLog
from core.ops.metrics import metrics_path
from core.ops.sd_notify import Notifier
from tests.support.helpers import ROOT
from tests.support.inbox_helpers import drop, frame_lines, text_of, wait_for
from tests.support.cli import run_cli
from tests.support.watch import Watcher

HEALTH_KEYS = {"receiver", "observer", "last_sweep_at", "last_frame_at", "outbox_pending", "faults_open"}


def status(home) -> dict:
    done = run_cli("--home", str(home.root), "status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["health"]


def messages(sock: socket.socket):
    """Each datagram's ``KEY=value`` lines, as they come."""
    while True:
        yield sock.recv(4096).decode().splitlines()


def test_watch_tells_a_notify_socket_ready_then_watchdog_then_stopping(home, tmp_path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify.sock"))
    sock.settimeout(60)  # a hang becomes a failure; no message is awaited for a set time
    watcher = Watcher(home, tmp_path, env={"NOTIFY_SOCKET": str(tmp_path / "notify.sock"), "WATCHDOG_USEC": "2000000"})
    try:
        seen = messages(sock)
        first = next(seen)
        assert first[0] == "READY=1" and first[1].startswith("STATUS=observer running, sweep running")
        while "WATCHDOG=1" not in next(seen):
            pass
        watcher.proc.send_signal(signal.SIGTERM)
        while "STOPPING=1" not in (lines := next(seen)):
            assert "READY=1" not in lines
    finally:
        assert watcher.signal(signal.SIGTERM) == 0
        sock.close()


def test_the_notifier_reaches_an_abstract_socket_and_is_silent_without_one():
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    name = f"ussd-test-{id(sock)}"
    sock.bind("\0" + name)
    sock.settimeout(10)
    try:
        notifier = Notifier({"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "1000000"})
        notifier.ready("up")
        assert sock.recv(100) == b"READY=1\nSTATUS=up"
        notifier.keep_alive(healthy=False)
        notifier.keep_alive(healthy=True)
        assert sock.recv(100) == b"WATCHDOG=1"  # the unhealthy call sent nothing before it
    finally:
        sock.close()
    silent = Notifier({})
    assert not silent.enabled and silent.send("READY=1") is False


def test_status_health_follows_a_running_watch_and_its_death(home, tmp_path):
    Receiver(str(home.db)).close()  # a store no watch runs on (status never creates one)
    idle = status(home)
    assert HEALTH_KEYS <= set(idle)
    assert idle["receiver"] == {"running": False, "processes": []} and idle["observer"] == "none"
    watcher = Watcher(home, tmp_path, "--sweep-interval", "0.2", "--settle-time", "0.1")
    try:
        drop(home, "a.txt", text_of(frame_lines("h", 3)))
        h = wait_for(lambda: (h := status(home))["last_frame_at"] and h["last_sweep_at"] and h, what="health figures")
        assert h["receiver"]["running"] is True
        assert [(p["role"], p["pid"]) for p in h["receiver"]["processes"]] == [("watch", watcher.proc.pid)]
        assert h["observer"] == "running" and h["sweep"] == "running"
        assert h["outbox_pending"] == 0 and h["faults_open"] == 0 and h["faults"] == []
    finally:
        assert watcher.signal(signal.SIGKILL) == -signal.SIGKILL
    after = status(home)  # killed, it left its record behind; the lock it held went with it
    assert after["receiver"]["running"] is False and after["observer"] == "none"
    assert after["last_frame_at"] == h["last_frame_at"]


def test_watch_writes_a_metrics_file_prometheus_can_parse(home, tmp_path):
    feed = tmp_path / "feed.txt"
    feed.write_text(text_of(frame_lines("m", 4)))
    assert run_cli("--home", str(home.root), "ingest", str(feed)).returncode == 0
    watcher = Watcher(home, tmp_path)
    try:
        path = wait_for(lambda: metrics_path(home).exists() and metrics_path(home), what="the metrics file")
        text = path.read_text()
    finally:
        assert watcher.signal(signal.SIGTERM) == 0
    families = {f.name: f for f in text_string_to_metric_families(text)}
    value = lambda name: families[name].samples[0].value  # noqa: E731
    assert value("ussd_receiver_up") == 1.0
    assert value("ussd_observer_running") == 1.0
    assert value("ussd_cases") == 4.0
    assert value("ussd_outbox_pending") == 0.0 and value("ussd_faults_open") == 0.0
    assert {"ussd_last_sweep_timestamp_seconds", "ussd_last_frame_timestamp_seconds"} <= set(families)
    frames = {(s.labels["path"], s.labels["outcome"]): s.value for s in families["ussd_frames"].samples
              if s.name == "ussd_frames_total"}
    assert frames == {("cli", "APPLIED"): 4.0}
    assert families["ussd_frames"].type == "counter"
    assert not list(path.parent.glob("*.tmp*"))  # written through a temporary file renamed into place


def _logger(name: str, handler: logging.Handler) -> logging.Logger:
    logger = logging.getLogger(f"ussd.test.{name}")
    logger.propagate = False
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return logger


def test_the_log_rotates_by_size_and_two_writers_follow_each_others_rotation(tmp_path):
    path = tmp_path / "receiver.log"
    one, two = RotatingLog(path, 4096, 2), RotatingLog(path, 4096, 2)
    a, b = _logger("a", one), _logger("b", two)
    try:
        for n in range(200):
            (a if n % 2 else b).info("line %03d %s", n, "x" * 60)
    finally:
        one.close()
        two.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["receiver.log", "receiver.log.1", "receiver.log.2"]  # the count holds
    assert all(p.stat().st_size <= 4096 for p in tmp_path.iterdir())
    newest = path.read_text().splitlines()
    assert newest[-1].startswith("line 199") and newest[-2].startswith("line 198")  # both writers, one file


@pytest.mark.parametrize("table, setting, message", [
    ("alerts", 'url = "ftp://example.org/x"', "alerts setting url must be an http:// or https:// address"),
    ("alerts", 'events = ["conflict", "weather"]', "unknown kind 'weather'"),
    ("alerts", "timeout = 0", "alerts setting timeout = 0 is out of range"),
    ("alerts", "retry_first = 9.0", "alerts setting retry_first = 9.0 is out of range (0.1 to 5)"),
    ("alerts", 'command = ""', "alerts setting command is empty"),
    ("alerts", 'colour = "red"', "unknown setting 'colour'"),
    ("logs", "max_bytes = 100", "logs setting max_bytes = 100 is too small"),
    ("logs", "backups = -1", "logs setting backups = -1 is out of range"),
    ("logs", 'size = "1M"', "unknown setting 'size'"),
])
def test_a_bad_alerts_or_logs_setting_stops_watch_with_one_line_naming_it(home, table, setting, message):
    home.config.write_text(f"[{table}]\n{setting}\n")
    done = run_cli("--home", str(home.root), "watch", cwd=ROOT)  # refused before it starts: in-process
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert message in done.stderr and f"[{table}]" in done.stderr
