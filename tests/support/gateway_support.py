"""Helpers for the gateway tests: gateway accounts through the CLI, a real ``watch --listen``, posts."""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from core import Receiver
from core.gateways.accounts import counts
from tests.support.helpers import frame
from tests.support.signing import sign
from tests.support.watch import Watcher

PHONE = "+254711222333"
PHONE_DIGITS = "711222333"


def add_gateway(home, tmp_path, capsys, name: str, kind: str, *extra: str) -> str:
    """Add a gateway through the CLI; its path (with the token)."""
    capsys.readouterr()
    assert sign(home, tmp_path, "--json", "gateway", "add", name, "--kind", kind, *extra, reason="test gateway") == 0
    return json.loads(capsys.readouterr().out)["path"]


def secret_file(tmp_path: Path, name: str, secret: str) -> str:
    path = tmp_path / f"{name}.secret"
    path.write_text(secret + "\n")
    path.chmod(0o600)
    return str(path)


class Listening(Watcher):
    """``ussd-console watch --listen 127.0.0.1:0`` and the port it bound."""

    def __init__(self, home, tmp_path, *flags: str, env=None):
        # No observer: the sweep alone takes the spooled files, and inotify instances (a per-user
        # limit shared by every process on the machine) are not used up by the tests.
        super().__init__(home, tmp_path, "--listen", "127.0.0.1:0", "--no-observer", "--sweep-interval", "0.5",
                         *flags, env=env)
        text = (home.logs / "receiver.log").read_text()
        self.port = int(re.findall(r"listening on http://127\.0\.0\.1:(\d+)/in/", text)[-1])
        self.base = f"http://127.0.0.1:{self.port}"


def post(base: str, path: str, body: bytes = b"", headers: dict | None = None, method: str = "POST",
         timeout: float = 60.0) -> tuple[int, dict, bytes]:
    """One request; ``(status, headers, body)`` whatever the status."""
    request = urllib.request.Request(base + path, data=body if method == "POST" else None, method=method,
                                     headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()
    except (urllib.error.URLError, ConnectionError, http.client.HTTPException, TimeoutError):
        return 0, {}, b""  # no answer at all (the receiver was killed)


def form(**fields) -> bytes:
    return urlencode(fields).encode()


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def at_sms(fid: str, text: str, msg_id: str) -> bytes:
    return form(**{"from": PHONE, "to": "40123", "text": f"{fid} {text}", "date": "2026-12-01 10:00:00",
                   "id": msg_id, "linkId": "link1"})


def smsgate(key: str, message: str, message_id: str, stamp: str = "1764583200",
            event_id: str = "Ey6ECgOkVVFjz3CL48B8C") -> tuple[bytes, dict]:
    body = json.dumps({"event": "sms:received", "id": event_id, "deviceId": "ffffffffceb0b1db",
                       "webhookId": "LreFUt-Z3sSq0JufY9uWB",
                       "payload": {"messageId": message_id, "message": message, "phoneNumber": PHONE,
                                   "simNumber": 1, "receivedAt": "2026-12-01T12:00:00.000+03:00"}}).encode()
    signature = hmac.new(key.encode(), body + stamp.encode(), hashlib.sha256).hexdigest()
    return body, {"Content-Type": "application/json", "X-Signature": signature, "X-Timestamp": stamp}


def frames(n: int, prefix: str = "gw") -> list[tuple[str, str]]:
    return [(f"{prefix}{i}-1", frame(1, f"S{i}", "MED", 3 + i, 80)) for i in range(n)]


def every_byte_under(root: Path) -> bytes:
    out = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out.append(path.read_bytes())
    return b"\n".join(out)


def self_signed(folder):
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))


def per_source(home) -> dict:
    with Receiver(str(home.db)) as r:
        return r.per_source()


def gateway_counts(home) -> dict:
    with Receiver(str(home.db)) as r:
        return counts(r.db)
