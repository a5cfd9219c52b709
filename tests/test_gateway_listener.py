"""Gateways posting to a real ``ussd-console watch --listen``: every kind's real format, each frame once
across gateway retries and field re-sends, the refusals, kill -9 between commit and answer, a locked
store, and no phone number, token or secret anywhere in the home afterwards."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import threading

from twilio.request_validator import RequestValidator

from core import Receiver
from tests.support.gateway_support import (
    FORM, PHONE, PHONE_DIGITS, Listening, add_gateway, at_sms, every_byte_under, form, frames, post, secret_file,
    gateway_counts, per_source, self_signed, smsgate,
)
from tests.support.inbox_helpers import Holds, wait_for
from tests.support.signing import add_operators, sign


def ledger(home) -> dict[str, str]:
    with Receiver(str(home.db)) as r:
        return {c.frame_id: c.source for c in r.cases(limit=1000)}


def test_every_kind_in_its_real_format_applies_each_frame_once(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    paths = {
        "at": add_gateway(home, tmp_path, capsys, "at", "africastalking"),
        "ussd": add_gateway(home, tmp_path, capsys, "ussd", "africastalking-ussd", "--reply", "CON"),
        "phone": add_gateway(home, tmp_path, capsys, "phone", "smsgate", "--secret-file",
                             secret_file(tmp_path, "phone", "sms-key")),
        "tw": add_gateway(home, tmp_path, capsys, "tw", "twilio", "--secret-file",
                          secret_file(tmp_path, "tw", "twilio-token"), "--public-url", "https://rx.example.org"),
        "tr": add_gateway(home, tmp_path, capsys, "tr", "telerivet", "--secret-file",
                          secret_file(tmp_path, "tr", "tr-secret")),
        "gen": add_gateway(home, tmp_path, capsys, "gen", "generic"),
    }
    f = frames(8)
    w = Listening(home, tmp_path)
    try:
        # Africa's Talking: a webhook retry (same id) and a field re-send (new id, same frame).
        for msg_id in ("ATX1", "ATX1", "ATX2"):
            assert post(w.base, paths["at"], at_sms(*f[0], msg_id), FORM)[0] == 200
        # USSD: the session's text grows; earlier segments are transport repeats.
        one = f"{f[1][0]} {f[1][1]}"
        two = f"{one}*{f[2][0]} {f[2][1]}"
        for text in ("", one, two):
            status, headers, body = post(w.base, paths["ussd"], form(sessionId="S1", serviceCode="*384#",
                                                                      phoneNumber=PHONE, networkCode="1",
                                                                      text=text), FORM)
            assert status == 200 and headers["Content-Type"].startswith("text/plain") and body.startswith(b"CON ")
        assert f[2][0].encode() in body and f[1][0].encode() in body
        # SMS Gateway for Android: the same SMS twice under a new event id, signed, clock a day off.
        for event_id in ("e1", "e2"):
            body, headers = smsgate("sms-key", f"{f[3][0]} {f[3][1]}\n{f[4][0]} {f[4][1]}", "m1",
                                    stamp="1700000000", event_id=event_id)
            assert post(w.base, paths["phone"], body, headers)[0] == 200
        # Twilio, signed over the public URL and the printed path.
        fields = {"MessageSid": "SM1", "AccountSid": "AC1", "From": PHONE, "To": "+15005550006",
                  "Body": f"{f[5][0]} {f[5][1]}", "NumMedia": "0"}
        signature = RequestValidator("twilio-token").compute_signature("https://rx.example.org" + paths["tw"], fields)
        status, headers, body = post(w.base, paths["tw"], form(**fields), {**FORM, "X-Twilio-Signature": signature})
        assert status == 200 and body.endswith(b"<Response/>") and "xml" in headers["Content-Type"]
        # Telerivet and generic.
        assert post(w.base, paths["tr"], form(event="incoming_message", id="SMx", content=f"{f[6][0]} {f[6][1]}",
                                              from_number=PHONE, to_number="+1", secret="tr-secret"), FORM)[0] == 200
        gen = json.dumps([{"frame_id": f[7][0], "frame": f[7][1]}, {"frame": f[7][1]}]).encode()
        assert post(w.base, paths["gen"], gen, {"Content-Type": "application/json"})[0] == 200
    finally:
        assert w.signal(signal.SIGTERM) == 0
    got = ledger(home)
    assert got == {f[0][0]: "gw_at", f[1][0]: "gw_ussd", f[2][0]: "gw_ussd", f[3][0]: "gw_phone",
                   f[4][0]: "gw_phone", f[5][0]: "gw_tw", f[6][0]: "gw_tr", f[7][0]: "gw_gen"}
    c = gateway_counts(home)
    assert (c["at"]["posts"], c["at"]["webhook_retries"], c["at"]["messages"]) == (3, 1, 2)
    assert per_source(home)["gw_at"] == {"APPLIED": 1, "DUPLICATE": 1}  # the field re-send alone
    assert (c["ussd"]["webhook_retries"], c["ussd"]["messages"], c["ussd"]["ignored"]) == (1, 2, 1)
    assert c["phone"]["webhook_retries"] == 1 and per_source(home)["gw_phone"] == {"APPLIED": 2}
    assert per_source(home)["gw_gen"] == {"APPLIED": 1, "REJECT_BAD_FORMAT": 1}  # the bare frame
    with Receiver(str(home.db)) as r:
        assert [x.reason for x in r.rejects() if x.source == "gw_gen"] == ["no_frame_id"]
    log = (home.logs / "receiver.log").read_text()
    assert "clock is" in log  # the skew is told, the post taken
    everything = every_byte_under(home.root) + w.stderr().encode()
    assert PHONE_DIGITS.encode() not in everything
    for path in paths.values():
        assert path.rsplit("/", 1)[1].encode() not in everything
    for secret in (b"sms-key", b"twilio-token", b"tr-secret"):
        assert secret not in everything


def test_refusals_change_nothing_and_are_counted(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    at = add_gateway(home, tmp_path, capsys, "at", "africastalking")
    phone = add_gateway(home, tmp_path, capsys, "phone", "smsgate", "--secret-file",
                        secret_file(tmp_path, "phone", "sms-key"))
    gone = add_gateway(home, tmp_path, capsys, "gone", "africastalking")
    assert sign(home, tmp_path, "gateway", "retire", "gone") == 0
    (fid, text), = frames(1)
    w = Listening(home, tmp_path)
    try:
        assert post(w.base, at.rsplit("/", 1)[0] + "/wrongtoken", at_sms(fid, text, "1"), FORM)[0] == 404
        assert post(w.base, gone, at_sms(fid, text, "1"), FORM)[0] == 404
        assert post(w.base, "/in/nobody/x", at_sms(fid, text, "1"), FORM)[0] == 404
        assert post(w.base, at, method="GET")[0] == 405
        assert post(w.base, at, b"text=" + b"x" * (64 * 1024 + 10), FORM)[0] == 413
        body, headers = smsgate("another-key", f"{fid} {text}", "m1")
        assert post(w.base, phone, body, headers)[0] == 403
        assert post(w.base, phone, body, {"Content-Type": "application/json"})[0] == 403  # unsigned
        assert post(w.base, at + "?token=leak", at_sms(fid, text, "1"), FORM)[0] == 200
        wait_for(lambda: gateway_counts(home)["phone"]["refused_403"] == 2, what="refused posts counted")
    finally:
        assert w.signal(signal.SIGTERM) == 0
    assert ledger(home) == {fid: "gw_at"}
    c = gateway_counts(home)
    assert (c["at"]["refused_405"], c["at"]["refused_413"], c["phone"]["refused"]) == (1, 1, 2)
    with sqlite3.connect(home.db) as db:
        alerts = db.execute("SELECT summary FROM alert_events WHERE kind = 'fault'").fetchall()
    assert len([a for a in alerts if "gateway phone" in a[0]]) == 1  # one alert for two refusals
    log = (home.logs / "receiver.log").read_text()
    assert "leak" not in log and at.rsplit("/", 1)[1] not in log
    # Each gateway's first post has its line; the rest are summed up by answer when watch stops.
    assert "gateway phone: first post since the start, answered 403" in log
    assert re.search(r"gateway phone: 1 post in \d+ s: 1 answered 403; slowest \d", log), log
    assert "gateway at: first post since the start, answered 405" in log
    assert re.search(r"gateway at: 2 posts in \d+ s: 1 answered 200, 1 answered 413;", log), log
    assert re.search(r"posts to no gateway: 3 posts in \d+ s: 3 answered 404;", log), log


def test_over_the_rate_is_429_with_retry_after(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    at = add_gateway(home, tmp_path, capsys, "at", "africastalking")
    home.config.write_text("[gateways]\nrate = 1\nburst = 2\n")
    f = frames(4)
    w = Listening(home, tmp_path)
    try:
        answers = [post(w.base, at, at_sms(fid, text, fid), FORM) for fid, text in f]
    finally:
        assert w.signal(signal.SIGTERM) == 0
    statuses = [a[0] for a in answers]
    assert statuses[:2] == [200, 200] and 429 in statuses[2:]
    assert all(int(a[1]["Retry-After"]) >= 1 for a in answers if a[0] == 429)
    taken = {fid for (fid, _t), a in zip(f, answers) if a[0] == 200}
    assert set(ledger(home)) == taken  # a 429 took nothing in, and nothing answered 200 is missing


def test_a_post_answered_after_commit_survives_kill_9_between_commit_and_answer(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    at = add_gateway(home, tmp_path, capsys, "at", "africastalking")
    (fid, text), = frames(1)
    holds = Holds(tmp_path / "holds")
    w = Listening(home, tmp_path, env=holds.env)
    answer: list = []
    sender = threading.Thread(target=lambda: answer.append(post(w.base, at, at_sms(fid, text, "1"), FORM, timeout=5)))
    sender.start()
    marker = holds.next(w.proc.pid, alive=lambda: w.proc.poll() is None)
    assert marker is not None, w.stderr()
    assert w.signal(signal.SIGKILL) == -signal.SIGKILL  # after the commit, before the answer
    sender.join(60)
    assert not answer or answer[0][0] != 200  # the gateway never heard 200, so it re-sends
    assert ledger(home) == {fid: "gw_at"}  # and the frame is already in
    w = Listening(home, tmp_path)
    try:
        assert post(w.base, at, at_sms(fid, text, "1"), FORM)[0] == 200  # the re-send: harmless
    finally:
        assert w.signal(signal.SIGTERM) == 0
    assert ledger(home) == {fid: "gw_at"} and per_source(home)["gw_at"] == {"APPLIED": 1}


def test_with_the_store_locked_posts_are_spooled_into_the_inbox_and_nothing_answered_200_is_lost(
        home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    at = add_gateway(home, tmp_path, capsys, "at", "africastalking")
    f = frames(3)
    w = Listening(home, tmp_path)
    try:
        locker = sqlite3.connect(home.db, isolation_level=None, timeout=60)
        locker.execute("BEGIN IMMEDIATE")  # held past the busy timeout
        try:
            answers = [post(w.base, at, at_sms(fid, text, fid), FORM) for fid, text in f]
            assert [a[0] for a in answers] == [200, 200, 200]
            spooled = [p for p in home.inbox.rglob("*gateway-*.jsonl") if p.is_file()]  # maybe claimed already
            assert spooled
            assert PHONE_DIGITS.encode() not in b"".join(p.read_bytes() for p in spooled)
        finally:
            locker.rollback()
            locker.close()
        wait_for(lambda: set(ledger(home)) == {fid for fid, _t in f}, what="the spooled frames taken in")
    finally:
        assert w.signal(signal.SIGTERM) == 0
    assert gateway_counts(home)["at"]["spooled"] == 3
    assert PHONE_DIGITS.encode() not in every_byte_under(home.root)


def test_a_spooled_post_is_taken_in_as_its_gateways_and_its_retry_is_a_webhook_retry(home, tmp_path, capsys):
    from core.rules.gateway_messages import content_key
    from core.gateways.posts import message_key

    add_operators(home, tmp_path, "alice")
    office = add_gateway(home, tmp_path, capsys, "office", "africastalking")
    fid, text = frames(1, "lk")[0]
    body = at_sms(fid, text, "ATXid_9")
    w = Listening(home, tmp_path)
    try:
        locker = sqlite3.connect(home.db, isolation_level=None, timeout=60)
        locker.execute("BEGIN EXCLUSIVE")  # held past the busy timeout: the post is spooled
        try:
            assert post(w.base, office, body, FORM)[0] == 200
            [spooled] = [p for p in home.inbox.rglob("*gateway-*.jsonl") if p.is_file()]
            data = spooled.read_bytes()
            [line] = [json.loads(line) for line in data.splitlines()]
            assert line == {"frame_id": fid, "frame": text, "gateway": "office",
                            "gateway_message": message_key("ATXid_9"),
                            "gateway_content": content_key([(fid, text)])}
            assert PHONE_DIGITS.encode() not in data and b"ATXid_9" not in data
        finally:
            locker.rollback()
            locker.close()
        wait_for(lambda: ledger(home) == {fid: "gw_office"}, what="the spooled frame taken in as gw_office's")
        assert gateway_counts(home)["office"]["messages"] == 1
        # The gateway posts the same message again: a webhook retry, not offered to the ledger again.
        assert post(w.base, office, body, FORM)[0] == 200
        # A spooled file of the first format (frames only) is still an ordinary inbox file.
        old_id, old_text = frames(1, "old")[0]
        (home.inbox / "gateway-firstformatfile.jsonl").write_text(json.dumps({"frame_id": old_id, "frame": old_text}))
        wait_for(lambda: old_id in ledger(home), what="the first-format spool file taken in")
    finally:
        assert w.signal(signal.SIGTERM) == 0
    g = gateway_counts(home)["office"]
    assert (g["spooled"], g["messages"], g["webhook_retries"]) == (1, 1, 1)
    sources = per_source(home)
    assert sources == {"gw_office": {"APPLIED": 1}, "sweep": {"APPLIED": 1}}, sources  # the old file: the sweep's


def test_an_address_in_use_or_a_bad_listen_value_is_one_line_and_the_watch_ends(home, tmp_path):
    import socket
    import subprocess
    import sys

    from tests.support.helpers import ROOT

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        for value in (f"127.0.0.1:{taken.getsockname()[1]}", "nonsense"):
            run = subprocess.run([sys.executable, "-m", "console.cli", "watch", "--home", str(home.root),
                                  "--no-observer", "--listen", value], cwd=ROOT, capture_output=True, text=True,
                                 timeout=120)
            assert run.returncode == 2 and "Traceback" not in run.stderr and "Warning" not in run.stderr
            assert run.stderr.strip().splitlines()[-1].startswith("ussd-console: error: "), run.stderr
    finally:
        taken.close()


def test_https_with_tls_cert_and_key_from_the_config(home, tmp_path, capsys):
    import re
    import ssl
    import urllib.request

    add_operators(home, tmp_path, "alice")
    at = add_gateway(home, tmp_path, capsys, "at", "africastalking")
    self_signed(home.root)
    home.config.write_text('[gateways]\nlisten = "127.0.0.1:0"\ntls_cert = "cert.pem"\ntls_key = "key.pem"\n')
    (fid, text), = frames(1)
    from tests.support.watch import Watcher

    w = Watcher(home, tmp_path, "--no-observer")
    try:
        port = int(re.findall(r"listening on https://127\.0\.0\.1:(\d+)/in/", (home.logs / "receiver.log").read_text())[-1])
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        request = urllib.request.Request(f"https://127.0.0.1:{port}{at}", data=at_sms(fid, text, "1"), headers=FORM)
        with urllib.request.urlopen(request, context=context, timeout=60) as answer:
            assert answer.status == 200
    finally:
        assert w.signal(signal.SIGTERM) == 0
    assert ledger(home) == {fid: "gw_at"}
