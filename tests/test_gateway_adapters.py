"""The gateway kinds on requests made here, with each gateway's exact field names (the recorded
requests of ``tests/vectors/gateways/`` are ``test_gateway_kinds.py``'s).

Twilio's signature is checked against Twilio's own ``twilio`` package
(``RequestValidator``) as an independent oracle; SMS Gateway for Android's by
its documented algorithm, computed here by hand.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from urllib.parse import urlencode

import pytest
from twilio.request_validator import RequestValidator

from core.gateways.adapters import Request
from core.gateways.kinds import KINDS
from core.gateways.text import message_items
from core.rules.frame import Unreadable

F1 = "H1|1|Kakuma1|MED|3|86|#0a"
PHONE = "+254711222333"


def parse(kind, req):
    return KINDS[kind].parse(req)


def verify(kind, req, secret=None, url=None, now=None):
    return KINDS[kind].verify(req, secret, url, now)


def reply(kind, taken, prefix="END"):
    return KINDS[kind].reply(taken, prefix)


def reasons(items):
    return [t.reason if isinstance(t, Unreadable) else None for _f, t in items]


def form(**fields) -> bytes:
    return urlencode(fields).encode()


# -- text to frames ---------------------------------------------------------------------
def test_message_text_is_read_as_the_inbox_reads_it_one_frame_per_line():
    items = message_items(f"rec42-1 {F1}\r\nrec42-2,{F1}\n\n# note\n")
    assert items == [("rec42-1", F1), ("rec42-2", F1)]


def test_a_bare_frame_is_no_frame_id_and_never_applied_under_another_id():
    items = message_items(F1)
    assert items[0][0] is None and reasons(items) == ["no_frame_id"]
    assert message_items("hello there") == [("hello", "there")]  # judged as a frame, as in a file: bad_grammar
    assert reasons(message_items("hello")) == ["no_frame_in_text"]
    assert reasons(message_items("")) == ["no_frame_in_text"]
    assert reasons(message_items(None)) == ["no_text"]


def test_a_phone_number_in_a_rejected_text_is_kept_nowhere(tmp_path):
    from core import Receiver

    with Receiver(str(tmp_path / "r.db")) as r:
        r.ingest_many(message_items(f"call {PHONE} now\n{PHONE}\nH1|{PHONE}"), source="gw_test")
        rows = [tuple(x) for x in r.rejects()]
    assert len(rows) == 3 and "711222333" not in repr(rows)


# -- recorded requests, one per kind ----------------------------------------------------------
def test_africastalking_sms_callback():
    body = form(**{"from": PHONE, "to": "40123", "text": f"rec42-1 {F1}", "date": "2026-12-01 10:00:00",
                   "id": "ATXid_abc123", "linkId": "SampleLinkId123"})
    parsed = parse("africastalking", Request({}, body))
    (msg,) = parsed.messages
    assert msg.gateway_id == "ATXid_abc123" and msg.items == [("rec42-1", F1)]
    assert PHONE not in repr(parsed)
    assert reply("africastalking", ["rec42-1"]) == ("text/plain", b"")
    assert verify("africastalking", Request({}, body)).ok


def test_africastalking_ussd_offers_every_segment_of_the_session():
    body = form(sessionId="ATUid_s1", serviceCode="*384*123#", phoneNumber=PHONE, networkCode="63902",
                text=f"rec42-1 {F1}*rec42-2 {F1}")
    parsed = parse("africastalking-ussd", Request({}, body))
    assert [m.gateway_id for m in parsed.messages] == ["ATUid_s1:1", "ATUid_s1:2"]
    assert [m.items for m in parsed.messages] == [[("rec42-1", F1)], [("rec42-2", F1)]]
    assert PHONE not in repr(parsed)
    opened = parse("africastalking-ussd", Request({}, form(sessionId="s", serviceCode="*1#", phoneNumber=PHONE,
                                                           networkCode="1", text="")))
    assert opened.messages == [] and opened.ignored
    kind, text = reply("africastalking-ussd", ["rec42-1", "rec42-2"], "CON")
    assert kind == "text/plain" and text.startswith(b"CON ") and b"rec42-1, rec42-2" in text
    assert reply("africastalking-ussd", None)[1].startswith(b"END ") and b"send again" in reply(
        "africastalking-ussd", None)[1]


def smsgate_post(key: bytes, event="sms:received", stamp="1764583200", message=f"rec42-1 {F1}"):
    body = json.dumps({"event": event, "id": "Ey6ECgOkVVFjz3CL48B8C", "deviceId": "ffffffffceb0b1db0000018e937c815b",
                       "webhookId": "LreFUt-Z3sSq0JufY9uWB", "payload": {
                           "messageId": "abc123", "message": message, "phoneNumber": PHONE, "simNumber": 1,
                           "receivedAt": "2026-12-01T12:00:00.000+03:00"}}).encode()
    signature = hmac.new(key, body + stamp.encode(), hashlib.sha256).hexdigest()
    return Request({"x-signature": signature, "x-timestamp": stamp, "content-type": "application/json"}, body)


def test_smsgate_signed_post_with_a_skewed_clock_is_taken_and_the_skew_told():
    key = b"my-signing-key"
    req = smsgate_post(key)
    check = verify("smsgate", req, key, now=1764583200 + 86400)
    assert check.ok and check.skew == pytest.approx(-86400)
    (msg,) = parse("smsgate", req).messages
    assert msg.gateway_id == "abc123" and msg.items == [("rec42-1", F1)]


def test_smsgate_unsigned_or_wrongly_signed_or_other_events():
    key = b"my-signing-key"
    req = smsgate_post(key)
    assert not verify("smsgate", req, b"another key").ok
    assert verify("smsgate", Request({}, req.body), key).why == "unsigned"
    tampered = Request(req.headers, req.body.replace(b"rec42-1", b"rec42-9"))
    assert not verify("smsgate", tampered, key).ok
    other = parse("smsgate", smsgate_post(key, event="sms:sent"))
    assert other.messages == [] and other.ignored
    assert not verify("smsgate", req, None).ok


def test_twilio_signature_agrees_with_twilios_own_validator():
    token = "12345abcdef"
    url = "https://receiver.example.org/in/office/tok123"
    fields = {"MessageSid": "SM1234567890abcdef", "AccountSid": "AC123", "From": PHONE, "To": "+15005550006",
              "Body": f"rec42-1 {F1}", "NumMedia": "0", "NumSegments": "1", "SmsStatus": "received",
              "ApiVersion": "2010-04-01"}
    signature = RequestValidator(token).compute_signature(url, fields)
    req = Request({"x-twilio-signature": signature}, form(**fields))
    assert verify("twilio", req, token.encode(), url).ok
    assert not verify("twilio", req, token.encode(), "https://attacker.example/in/office/tok123").ok
    assert not verify("twilio", req, b"wrong", url).ok
    assert not verify("twilio", Request({}, req.body), token.encode(), url).ok
    (msg,) = parse("twilio", req).messages
    assert msg.gateway_id == "SM1234567890abcdef" and msg.items == [("rec42-1", F1)]
    assert reply("twilio", ["rec42-1"]) == ("text/xml", b'<?xml version="1.0" encoding="UTF-8"?><Response/>')


def test_telerivet_secret_field():
    body = form(event="incoming_message", id="SMa1b2c3", message_type="sms", content=f"rec42-1 {F1}",
                from_number=PHONE, to_number="+254700000000", phone_id="PN123", project_id="PJ123",
                secret="s3cret-webhook")
    req = Request({}, body)
    assert verify("telerivet", req, b"s3cret-webhook").ok
    assert not verify("telerivet", req, b"other").ok
    assert verify("telerivet", Request({}, form(event="incoming_message", content="x")), b"k").why == "unsigned"
    (msg,) = parse("telerivet", req).messages
    assert msg.gateway_id == "SMa1b2c3" and msg.items == [("rec42-1", F1)]
    sent = parse("telerivet", Request({}, form(event="send_status", id="x", secret="s3cret-webhook")))
    assert sent.messages == [] and sent.ignored


def test_generic_json_object_or_list():
    one = parse("generic", Request({}, json.dumps({"frame_id": "rec42-1", "frame": F1}).encode()))
    assert one.messages[0].items == [("rec42-1", F1)]
    many = parse("generic", Request({}, json.dumps([{"text": f"rec42-2 {F1}", "id": "m2"}, {"frame": F1}]).encode()))
    assert many.messages[0].gateway_id == "m2" and many.messages[0].items == [("rec42-2", F1)]
    assert reasons(many.messages[1].items) == ["no_frame_id"]
    assert reasons(parse("generic", Request({}, b"{nope")).messages[0].items) == ["not_json"]


def test_unreadable_bodies_are_one_reject_not_an_error():
    for kind in ("africastalking", "twilio", "telerivet", "africastalking-ussd"):
        parsed = parse(kind, Request({}, b"\xff\xfe"))
        assert reasons(parsed.messages[0].items) == ["bad_encoding"], kind
    assert reasons(parse("smsgate", Request({}, b"[1,2")).messages[0].items) == ["not_json"]


def test_the_spool_is_one_whole_json_lines_file_without_phone_numbers_or_nothing(tmp_path):
    from core.gateways.posts import Post, message_key
    from core.gateways.spool import spool
    from core.home import Home
    from core.rules.formats import read_items

    home = Home(tmp_path / "home").ensure()
    home.inbox.mkdir(parents=True, exist_ok=True)
    posts = [Post("office", "africastalking", "h", parse("africastalking", Request({}, form(
        **{"from": PHONE, "text": f"rec42-1 {F1}\ncall {PHONE}", "id": "1"}))).messages, False)]
    again = Post("office", "africastalking", "h", parse("africastalking", Request({}, form(
        **{"from": PHONE, "text": f"rec42-1 {F1}\ncall {PHONE}", "id": "1"}))).messages, False)  # a webhook retry
    [name], retries = spool(home, [*posts, again])
    assert retries == {("office", "webhook_retries"): 1}
    files = [p.name for p in home.inbox.iterdir() if p.is_file()]
    assert files == [name] and name.endswith(".jsonl")
    data = (home.inbox / name).read_bytes()
    assert b"711222333" not in data
    items, fmt = read_items(name, data)
    assert fmt == "jsonl" and items[0][:2] == ("rec42-1", F1) and len(items) == 2
    # Each line names its gateway and its message's key (the store's hash), never the message id.
    lines = [json.loads(line) for line in data.splitlines()]
    assert {(line["gateway"], line["gateway_message"]) for line in lines} == {("office", message_key("1"))}
    home.inbox.rename(tmp_path / "elsewhere")  # the inbox gone: an error, and nothing half-written anywhere
    with pytest.raises(OSError):
        spool(home, posts)
    assert not home.inbox.exists()


def test_a_spooled_message_cut_by_a_stop_is_resumed_whole_and_its_key_kept_only_once_it_is_in(inbox):
    import os
    import threading

    from core.config import InboxConfig
    from core.gateways import accounts
    from core.gateways.posts import Post
    from core.gateways.spool import spool
    from core.inbox import deliver
    from core.store.gateway_tables import add_account
    from tests.support.helpers import frame

    home, r = inbox
    add_account(r.db, {"name": "office", "kind": "africastalking", "token_hash": "h", "secret_file": None,
                       "public_url": None, "reply": "END"}, at=1.0, by="alice", seq=1)
    two = f"sp1-1 {frame(1, 'S1', 'MED', 3, 80)}\nsp2-1 {frame(1, 'S2', 'MED', 4, 80)}"

    def post(text: str, msg_id: str) -> Post:
        return Post("office", "africastalking", "h", parse("africastalking", Request({}, form(
            **{"from": PHONE, "text": text, "id": msg_id}))).messages, False)

    def drop_spool(*posts: Post):
        [name], _retries = spool(home, list(posts))
        os.utime(home.inbox / name, (1.0, 1.0))  # settled long ago
        return home.inbox / name

    config = InboxConfig(settle_time=0.3, batch_lines=1)
    stop = threading.Event()
    stop.set()
    first = deliver(drop_spool(post(two, "M1"), post(f"sp3-1 {frame(1, 'S3', 'MED', 5, 80)}", "M2")),
                    "watch", r, home, config, stop=stop)
    assert (first.status, first.line) == ("held", 1)
    assert accounts.counts(r.db)["office"]["messages"] == 0  # M1 is half in: not yet a message taken in
    rest = deliver(first.claimed, "sweep", r, home, config)
    assert (rest.status, rest.frames) == ("done", 2)
    assert r.per_source() == {"gw_office": {"APPLIED": 3}}
    # M1 spooled again (the gateway's retry during a second fault): a webhook retry, nothing offered.
    again = deliver(drop_spool(post(two, "M1")), "watch", r, home, config)
    assert (again.status, again.frames) == ("done", 0)
    office = accounts.counts(r.db)["office"]
    assert (office["messages"], office["webhook_retries"]) == (2, 1)
    assert r.per_source() == {"gw_office": {"APPLIED": 3}}
