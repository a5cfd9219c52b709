"""``gateway add/list/retire``: signed, the token shown once and kept only as a hash, reconciled by
``audit verify``."""

from __future__ import annotations

import json
import sqlite3

import pytest

from core.home import Home
from tests.support.signing import add_operators, cli, passfile, sign


@pytest.fixture
def home(tmp_path):
    h = Home(tmp_path / "home")
    h.ensure()
    return h


def add(home, tmp_path, capsys, name="office", *extra, kind="africastalking") -> dict:
    capsys.readouterr()
    assert sign(home, tmp_path, "--json", "gateway", "add", name, "--kind", kind, *extra,
                reason="our short code") == 0
    return json.loads(capsys.readouterr().out)


def test_add_prints_the_path_once_and_keeps_only_its_hash(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    info = add(home, tmp_path, capsys)
    assert info["name"] == "office" and info["kind"] == "africastalking"
    prefix, name, token = info["path"].rsplit("/", 2)
    assert prefix == "/in" and name == "office" and len(token) >= 22  # 24 random bytes, base64url
    raw = (home.db).read_bytes()
    assert token.encode() not in raw
    with sqlite3.connect(home.db) as db:
        (stored,) = db.execute("SELECT token_hash FROM gateways").fetchone()
    assert token not in stored and len(stored) == 64
    capsys.readouterr()
    assert cli(home, "gateway", "list") == 0
    listed = capsys.readouterr().out
    assert "office" in listed and "africastalking" in listed and token not in listed
    assert cli(home, "audit", "verify") == 0


def test_add_is_signed_and_refuses_without_operator_reason_or_secret(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    assert cli(home, "gateway", "add", "x", "--kind", "generic", "--reason", "r",
               "--passphrase-file", passfile(tmp_path, "alice")) != 0
    assert sign(home, tmp_path, "gateway", "add", "x", "--kind", "generic", reason=None) != 0
    assert sign(home, tmp_path, "gateway", "add", "x", "--kind", "generic", passphrase="wrong passphrase") != 0
    assert sign(home, tmp_path, "gateway", "add", "phone", "--kind", "smsgate") != 0  # no --secret-file
    key = tmp_path / "key"
    key.write_text("k\n")
    key.chmod(0o644)
    assert sign(home, tmp_path, "gateway", "add", "phone", "--kind", "smsgate", "--secret-file", str(key)) != 0
    assert sign(home, tmp_path, "gateway", "add", "tw", "--kind", "twilio", "--secret-file", str(key)) != 0
    assert sign(home, tmp_path, "gateway", "add", "Bad-Name", "--kind", "generic") != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "chmod 600" in err
    with sqlite3.connect(home.db) as db:
        assert db.execute("SELECT COUNT(*) FROM gateways").fetchone() == (0,)


def test_retire_is_signed_and_audit_verify_reconciles_gateways(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice")
    key = tmp_path / "key"
    key.write_text("signing-key\n")
    key.chmod(0o600)
    add(home, tmp_path, capsys, "phone", "--secret-file", str(key), kind="smsgate")
    assert sign(home, tmp_path, "gateway", "retire", "phone") == 0
    assert sign(home, tmp_path, "gateway", "retire", "phone") != 0  # already retired
    capsys.readouterr()
    assert cli(home, "--json", "gateway", "list") == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["retired_at"] and row["added_by"] == "alice"
    assert cli(home, "audit", "verify") == 0
    with sqlite3.connect(home.db) as db:  # a row changed by hand beside the log
        db.execute("UPDATE gateways SET retired_at = NULL, retired_seq = NULL")
        db.execute("INSERT INTO gateways (name, kind, token_hash, reply, added_at, added_by, added_seq) "
                   "VALUES ('rogue', 'generic', 'x', 'END', 0, 'nobody', 99)")
    capsys.readouterr()
    assert cli(home, "audit", "verify") != 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert "gateway rogue: no signed entry added this gateway" in text
    assert "gateway phone: retired_at" in text


def test_status_metrics_and_activity_show_each_gateway_as_a_path(home, tmp_path, capsys):
    from rich.console import Console

    from console.panels.activity import per_path_table
    from core import Receiver
    from core.gateways.accounts import counts, gateway_models
    from core.ops.metrics import metrics_path, write_metrics

    add_operators(home, tmp_path, "alice")
    add(home, tmp_path, capsys, "office")
    with Receiver(str(home.db)) as r:  # counts as the listener leaves them
        C = gateway_models(r.db).GatewayCount
        C.insert_many([("office", "posts", 5), ("office", "webhook_retries", 2), ("office", "refused_403", 1)],
                      fields=[C.gateway, C.what, C.count]).execute()
        r.ingest_many([("g1-1", "H1|1|Kakuma1|MED|3|86|#0a")], source="gw_office")
        write_metrics(home, r, {"receiver": {"running": False}, "observer": "off", "sweep": "off",
                                "last_sweep_at": None, "last_frame_at": None, "outbox_pending": 0,
                                "faults_open": 0, "files_waiting": 0, "alerts_delivered": {}})
        gateways = counts(r.db)
        per_source = r.per_source()
    capsys.readouterr()
    assert cli(home, "--json", "status") == 0
    status = json.loads(capsys.readouterr().out)["gateways"]["office"]
    assert (status["accepted"], status["webhook_retries"], status["refused"], status["path"]) == (5, 2, 1, "gw_office")
    assert status["refused_by_status"]["403"] == 1 and sum(status["frames"].values()) == 1
    prom = metrics_path(home).read_text()
    assert 'ussd_gateway_posts_total{gateway="office",what="webhook_retries"} 2.0' in prom
    assert 'ussd_frames_total{outcome=' in prom and 'path="gw_office"' in prom
    screen = Console(width=120, record=True)
    screen.print(per_path_table(per_source, {}, None, gateways))
    shown = screen.export_text()
    assert "gw_office" in shown and "gateway office: 5 posts, 2 webhook retries, 1 refused" in shown
