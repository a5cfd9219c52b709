"""``[report] every``: a real ``watch`` writes the situation report on schedule, keeps ``keep``, and
sends a ``report`` alert with its path; a report that cannot be written is a fault and an alert."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from core import Receiver
from core.inbox import prepare_home
from core.report.config import ReportConfig, load_report_config
from core.report.schedule import due
from core.store.outbox import outbox_models
from tests.support.alert_targets import CommandTarget
from tests.support.cli import cli
from tests.support.inbox_helpers import drop, frame_lines, text_of
from tests.support.waiting import wait_for
from tests.support.watch import Watcher

FLAGS = ("--settle-time", "0", "--no-observer", "--sweep-interval", "0.2")


def _config(home, target: CommandTarget, report: str) -> None:
    home.config.write_text(f"[alerts]\ncommand = {json.dumps(target.argv)}\n\n[report]\n{report}")


def test_watch_writes_reports_on_schedule_keeps_keep_and_alerts_with_the_path(home, tmp_path):
    target = CommandTarget(tmp_path / "target")
    reports = tmp_path / "reports"
    _config(home, target, f'every = "2s"\ndir = "{reports}"\nkeep = 2\n')
    prepare_home(home)
    drop(home, "live.txt", text_of(frame_lines("W", 50)))
    watcher = Watcher(home, tmp_path, *FLAGS)
    try:
        def alerted():
            sent = [e for e in target.delivered() if e["kind"] == "report"]
            # Each report covers the time since the one before: the 50 cases are in exactly one.
            return sent if len(sent) >= 3 and sum(e["details"]["cases"] for e in sent) == 50 else None
        sent = wait_for(alerted, what="three report alerts delivered, the 50 cases in one of them")
    finally:
        assert watcher.signal(signal.SIGTERM) == 0
    for event in sent:
        assert event["details"]["file"].startswith(str(reports / "report-")) and event["details"]["file"] in \
            event["summary"]
    html = sorted(reports.glob("report-*.html"))
    pdf = sorted(reports.glob("report-*.pdf"))
    assert 1 <= len(html) <= 2 and 1 <= len(pdf) <= 2, (html, pdf)  # keep = 2 of each
    newest = Path(sent[-1]["details"]["file"])
    assert newest in html and Path(sent[-1]["details"]["pdf"]) in pdf
    assert "Situation report" in newest.read_text() and newest.with_suffix(".pdf").read_bytes().startswith(b"%PDF")
    assert [e["details"]["cases"] for e in sent].count(50) == 1  # the file dropped before watch started
    for before, after in zip(sent, sent[1:]):
        assert after["details"]["since"] == before["details"]["until"]  # no gap, no overlap
    assert "scheduled report written" in home.log_file.read_text()


def test_a_report_that_cannot_be_written_is_a_fault_and_an_alert(home, tmp_path):
    target = CommandTarget(tmp_path / "target")
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the reports folder should be")
    _config(home, target, f'every = "2s"\ndir = "{blocked}"\n')
    watcher = Watcher(home, tmp_path, *FLAGS)
    try:
        def faulted():
            s = json.loads(cli(home, "--json", "status").stdout)
            return s if any(f.startswith("report failed") for f in s["health"]["faults"]) else None
        wait_for(faulted, what="the report fault in status")
        wait_for(lambda: any(e["kind"] == "fault" and "report failed" in e["summary"] for e in target.delivered()),
                 what="the report fault's alert delivered")
        with Receiver(str(home.db)) as r:
            kinds = [e.kind for e in outbox_models(r.db).AlertEvent.select()]
        assert "report" not in kinds
    finally:
        assert watcher.signal(signal.SIGTERM) == 0


def test_due_follows_at_and_every_and_waits_after_a_failure():
    daily = ReportConfig(every=86400.0, at="07:00")
    at_7 = daily.last_slot(1_800_000_000.0)
    assert due(daily, {}, at_7 + 1)
    assert not due(daily, {"last_made": {"at": at_7 + 5}}, at_7 + 3600)
    assert due(daily, {"last_made": {"at": at_7 - 60}}, at_7 + 1)  # yesterday's, and 07:00 has passed
    assert not due(daily, {"last_made": {"at": at_7 - 60}, "last_failure": {"at": at_7 + 1}}, at_7 + 60)
    assert due(daily, {"last_made": {"at": at_7 - 60}, "last_failure": {"at": at_7 + 1}}, at_7 + 700)
    assert not due(ReportConfig(), {}, at_7)  # not scheduled
    hourly = ReportConfig(every=3600.0)
    assert not due(hourly, {"last_made": {"at": 100.0}}, 3000.0) and due(hourly, {"last_made": {"at": 100.0}}, 3700.0)


@pytest.mark.parametrize("text, key", [('every = "often"', "every"), ('at = "7am"', "at"), ("keep = 0", "keep"),
                                       ('every = "0s"', "every"), ("colour = 1", "colour")])
def test_bad_report_settings_name_their_key_and_stop_watch(home, tmp_path, text, key):
    home.config.write_text(f"[report]\n{text}\n")
    with pytest.raises(ValueError, match=key):
        load_report_config(home.config)
    done = cli(home, "watch")
    assert done.returncode == 2 and key in done.stderr and "Traceback" not in done.stderr


def test_finish_waits_for_the_report_being_written(home, tmp_path):
    """watch's stop waits for a scheduled report still being written (a file cut off at the exit, or
    matplotlib's C code running as the interpreter ends, which aborted watch with SIGABRT)."""
    import threading

    from core.report.schedule import ReportSchedule

    prepare_home(home)
    writing, done = threading.Event(), threading.Event()

    def slow(now=None):
        writing.set()
        done.wait(60)
        return True

    schedule = ReportSchedule(home, str(home.db), ReportConfig(every=60, dir=str(tmp_path / "r")), [],
                              fault=lambda key, words: None, clear=lambda key: None)
    assert schedule.finish(timeout=0)  # nothing being written: nothing to wait for
    schedule.run_once = slow
    schedule.tick()
    assert writing.wait(60)
    assert not schedule.finish(timeout=0.05)  # still writing
    done.set()
    assert schedule.finish(timeout=60)
