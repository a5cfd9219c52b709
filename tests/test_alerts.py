"""Alerts that reach a person (docs/rules.md#running-unattended): the outbox, its per-target queues, retries, restarts."""

from __future__ import annotations

import json
import signal
import uuid

from core import Receiver
from core.alerts import AlertsConfig, Deliverer
from core.config import InboxConfig
from core.inbox import InboxService, deliver
from core.store import outbox
from tests.support.alert_targets import CommandTarget, SilentServer, conflict_file, conflicts, configure, deliveries
from tests.support.helpers import frame
from tests.support.inbox_helpers import drop, text_of, wait_for
from tests.support.cli import run_cli
from tests.support.clock import TestClock, tick
from tests.support.watch import Watcher

PHONE_TRACES = ("+254", "0722", "712345678")


def test_a_batch_of_event_ids_are_distinct_version_4_uuids_written_as_uuid4_writes_them():
    ids = outbox.event_ids(2000)
    assert len(set(ids)) == 2000
    for event_id in ids:
        parsed = uuid.UUID(event_id)
        assert (parsed.version, parsed.variant, parsed.hex) == (4, uuid.RFC_4122, event_id)
        assert len(event_id) == len(uuid.uuid4().hex)
    assert outbox.event_ids(0) == []



def test_a_command_that_fails_twice_then_succeeds_gets_the_conflict_once_after_the_retries(home, tmp_path):
    target = CommandTarget(tmp_path / "target", fail_first=2)
    configure(home, command=target.argv, events=["conflict"], retry_first=0.1, retry_cap=1.0)  # no 2 s + 4 s back-off
    watcher = Watcher(home, tmp_path)
    try:
        drop(home, "session.txt", conflict_file("c1"))
        wait_for(target.delivered, what="the conflict delivered to the command")
    finally:
        assert watcher.signal(signal.SIGTERM) == 0
    [event] = target.delivered()  # the watcher has stopped: nothing more can come
    assert target.calls() == [event["event_id"]] * 3  # two failures, one success, one stable id
    assert event["kind"] == "conflict"
    d = event["details"]
    assert d["frame_id"] == "c1-1" and d["reason"] == "same_frame_id_different_payload"
    assert d["first"]["frame"] == frame(1, "Kakuma1", "MED", 3, 86)
    assert d["newcomer"]["frame"] == frame(1, "Kakuma1", "MED", 9, 86)
    assert event["summary"].startswith("Conflict on c1-1: ") and "\n" not in event["summary"]
    assert not any(p in json.dumps(event) for p in PHONE_TRACES)
    [row] = deliveries(home, "delivered")
    assert (row["event_id"], row["target"], row["attempts"]) == (event["event_id"], "command", 3)
    assert deliveries(home, "pending") == deliveries(home, "failed") == []
    listed = run_cli("--home", str(home.root), "alerts", "--json")
    assert listed.returncode == 0, listed.stderr
    out = listed.stdout
    assert [json.loads(line)["state"] for line in out.splitlines()] == ["delivered"]


def test_an_alert_pending_when_watch_is_killed_is_delivered_after_the_restart(home, tmp_path):
    target = CommandTarget(tmp_path / "target", blocked=True)
    configure(home, command=target.argv, events=["conflict"], retry_first=0.1, retry_cap=1.0)
    watcher = Watcher(home, tmp_path)
    try:
        drop(home, "session.txt", conflict_file("k1"))
        wait_for(lambda: deliveries(home, "failed"), what="a failed first attempt recorded")
    finally:  # a watcher left running outlives the test and its deleted home
        assert watcher.signal(signal.SIGKILL) == -signal.SIGKILL
    tried = set(target.calls())
    target.unblock()
    assert target.delivered() == []
    watcher = Watcher(home, tmp_path)
    try:
        wait_for(target.delivered, what="the pending alert delivered after the restart")
    finally:
        assert watcher.signal(signal.SIGTERM) == 0
    [event] = target.delivered()
    assert tried == {event["event_id"]}  # the same event, not a new one
    assert [r["state"] for r in deliveries(home)] == ["delivered"]


def test_a_target_that_never_answers_delays_neither_the_other_target_nor_ingest(home, tmp_path):
    server = SilentServer()
    target = CommandTarget(tmp_path / "target")
    configure(home, command=target.argv, url=server.url, events=["conflict"])
    watcher = Watcher(home, tmp_path)
    try:
        drop(home, "first.txt", conflict_file("a1"))
        wait_for(lambda: server.event_ids() and target.delivered(), what="A at both targets, the url one held")
        [first] = target.delivered()
        assert server.event_ids() == [first["event_id"]]  # the url target is stuck on A
        drop(home, "second.txt", conflict_file("b1"))
        wait_for(lambda: len(target.delivered()) == 2, what="B delivered to the command")
        assert conflicts(home) == 2  # B was ingested while the url target hung on A
        second = target.delivered()[1]["event_id"]

        def commands_recorded():
            """Each command delivery as the store has it: it is stored once the command has exited."""
            states = {(r["event_id"], r["target"]): r["state"] for r in deliveries(home)}
            done = states.get((first["event_id"], "command")) == states.get((second, "command")) == "delivered"
            return states if done else None
        by_target = wait_for(commands_recorded, interval=0.2, what="both command deliveries recorded")
        assert by_target[(first["event_id"], "url")] != "delivered"
        assert by_target[(second, "url")] != "delivered"
        assert by_target[(first["event_id"], "command")] == by_target[(second, "command")] == "delivered"
        # The hanging attempt ends as a failure after its timeout, and A is retried (B waits behind it).
        failed = wait_for(lambda: [r for r in deliveries(home, "failed") if r["target"] == "url"],
                          what="the url attempt timed out")
        assert [r["event_id"] for r in failed] == [first["event_id"]]
        assert "no answer within 10 s" in failed[0]["last_error"]
    finally:
        assert watcher.signal(signal.SIGTERM) == 0
        server.close()


def test_two_deliverers_on_one_store_send_every_event_once(new_store, tmp_path):
    store = new_store()
    target = CommandTarget(tmp_path / "target")
    config = AlertsConfig(command=tuple(target.argv), events=("conflict",))
    with Receiver(store) as r:
        for n in range(12):
            r.ingest_many([(f"t{n}-1", frame(1, f"S{n}", "MED", 3, 5)), (f"t{n}-1", frame(1, f"S{n}", "MED", 4, 5))])
    pair = [Deliverer(store, config).start(), Deliverer(store, config).start()]
    try:
        wait_for(lambda: len(target.delivered()) >= 12, what="every event delivered")
    finally:
        for d in pair:
            assert d.stop(timeout=60)
    ids = [e["event_id"] for e in target.delivered()]
    assert len(ids) == len(set(ids)) == 12
    assert sorted(e["details"]["frame_id"] for e in target.delivered()) == sorted(f"t{n}-1" for n in range(12))


def test_a_target_failing_for_long_is_a_fault_of_the_service_and_an_alert_to_the_others(home, tmp_path, caplog,
                                                                                          refused_url):
    target = CommandTarget(tmp_path / "target")
    url = refused_url
    # Ten minutes before a failing target is a fault: reached by moving the service's clock on,
    # never by waiting; back-offs of up to 60 s pass the same way.
    alerts = AlertsConfig(command=tuple(target.argv), url=url, retry_first=5.0, retry_cap=60.0, fault_after=600.0)
    clock = TestClock()
    service = InboxService(home, config=InboxConfig(sweep_interval=0.2, settle_time=0.1), alerts=alerts,
                           clock=clock).start()
    url_tries = lambda: sum(r["attempts"] for r in deliveries(home) if r["target"] == "url")  # noqa: E731
    url_faults = lambda: [f for f in service.health()["faults"] if "alert target url failing" in f]  # noqa: E731
    try:
        drop(home, "session.txt", conflict_file("f1"))
        wait_for(lambda: url_tries() >= 1, what="the url target's first failed attempt")
        assert url_faults() == []  # failing, but not for long yet
        tick(service, clock, 600.0)
        fault = wait_for(url_faults, what="the url target's fault")
        assert "cannot reach" in fault[0] and "retried" in fault[0]
        kinds = lambda: [e["kind"] for e in target.delivered()]  # noqa: E731
        wait_for(lambda: "fault" in kinds(), what="the fault told through the command target")
        assert kinds()[0] == "conflict"
        tried = url_tries()
        wait_for(lambda: tick(service, clock, 60.0) or url_tries() >= tried + 2,
                 what="more failed attempts while the fault lasts")
        assert service.health()["faults"] == fault  # the same words: not news again
    finally:
        service.stop()
    said = [r for r in caplog.records if "alert target url failing" in r.getMessage()]
    assert len(said) == 1  # logged once, however long it lasts


def test_a_rejected_file_is_one_event_written_with_the_reject(inbox):
    home, r = inbox
    path = drop(home, "huge.txt", "x" * 200)
    result = deliver(path, "cli", r, home, InboxConfig(max_file_bytes=100))
    assert result.status == "rejected"
    [row] = outbox.listing(r.db)
    assert row["kind"] == "file_rejected" and row["target"] is None and row["state"] == "pending"
    assert row["details"] == {"file": "huge.txt", "path": "cli", "reason": "over the size limit (200 > 100 bytes)"}


def test_alerts_test_says_what_happened_at_each_target(home, tmp_path, refused_url):
    target = CommandTarget(tmp_path / "target")
    url = refused_url
    # The longest a target may take (60 s): the command is a Python start, which on a busy machine
    # can take longer than the default 10 s, and then the line would say it was killed.
    configure(home, command=target.argv, url=url, timeout=60)
    done = run_cli("--home", str(home.root), "alerts", "test")
    whole = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 1, whole
    # Read as words: piped, the output wraps at 80 columns, and where the command's line breaks
    # depends on the length of its paths (this Python's, the test's folder), not on what it says.
    said = " ".join(done.stdout.split())
    assert "command (" in said and "): delivered" in said, whole
    assert f"url ({url}): FAILED: cannot reach" in said, whole
    [event] = target.delivered()
    assert event["kind"] == "test" and event["event_id"].startswith("test-")
    home.config.write_text("")
    done = run_cli("--home", str(home.root), "alerts", "test")
    assert done.returncode == 2 and "no alert target" in done.stderr, done.stdout + done.stderr


def test_checkpoint_events_follow_the_audit_log_as_it_grows(home, tmp_path):
    from core.alerts.checkpoint import maybe_checkpoint
    from core.signing.audit import head
    from tests.support.signing import add_operators, sign

    with Receiver(str(home.db)) as r:
        assert maybe_checkpoint(r.db) is False  # an empty log: nothing to copy yet
    add_operators(home, tmp_path, "alice")
    assert sign(home, tmp_path, "retention", "set", "40") == 0
    with Receiver(str(home.db)) as r:
        assert maybe_checkpoint(r.db) is True
        assert maybe_checkpoint(r.db) is False  # once per growth
        current = head(r)
        [row] = [x for x in outbox.listing(r.db) if x["kind"] == "checkpoint"]
    assert current.count >= 1
    details = row["details"]
    assert (details["entries"], details["head"]) == (current.count, current.hash)
    # the very line `audit checkpoint` prints, which `audit verify --checkpoint -` takes back
    printed = run_cli("--home", str(home.root), "audit", "checkpoint")
    assert printed.returncode == 0, printed.stderr
    assert details["checkpoint"] == printed.stdout.splitlines()[0]
    assert list(details["operators"]) == ["alice"] and details["checkpoint"] in row["summary"]
    back = run_cli("--home", str(home.root), "audit", "verify", "--checkpoint", "-", input=details["checkpoint"])
    assert back.returncode == 0, back.stdout + back.stderr
