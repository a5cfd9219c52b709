"""Operators: key files, passphrases, names, retirement."""

from __future__ import annotations

import base64
import getpass
import logging
import stat

import pytest
from cryptography.hazmat.primitives import serialization

from core import Receiver
from core.signing.keys import ActionError, key_path
from core.signing import operator_changes, signed_action
from core.signing.operator_add import add_operator
from core.signing.operators import list_operators, load_signer
from core.signing.roles import ROLES

from .support.signing import PASSPHRASES, add_operators, cli, json_lines, passfile, sign


def retire(receiver, name, signer, reason, now=None):
    """Retire ``name``, signed by ``signer`` (a library caller: no home, so nothing is countersigned)."""
    return signed_action.sign(None, receiver, operator_changes.RETIRE, {"name": name}, operator=signer.name,
                              signer=signer, reason=reason, now=now)


ALL = list(ROLES)


@pytest.fixture
def receiver_at(home):
    r = Receiver(str(home.db))
    yield r
    r.close()


def test_key_file_is_0600_encrypted_and_holds_no_raw_key(home, receiver_at):
    add_operator(home, receiver_at, "alice", PASSPHRASES["alice"])
    path = key_path(home, "alice")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    data = path.read_bytes()
    assert data.startswith(b"-----BEGIN OPENSSH PRIVATE KEY-----")
    signer = load_signer(home, receiver_at, "alice", PASSPHRASES["alice"])
    raw = signer._key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    assert len(raw) == 32
    body = b"".join(line for line in data.splitlines() if not line.startswith(b"-----"))
    der = base64.b64decode(body)
    assert der.startswith(b"openssh-key-v1\0") and b"aes256-ctr" in der and b"bcrypt" in der  # a slow KDF
    for haystack in (data, der):
        assert raw not in haystack
        assert raw.hex().encode() not in haystack.lower()
        assert base64.b64encode(raw).rstrip(b"=") not in haystack
    # and the file is useless without the passphrase
    with pytest.raises(TypeError):
        serialization.load_ssh_private_key(data, password=None)


def test_wrong_passphrase_is_one_line_and_signs_nothing(home, receiver_at):
    add_operator(home, receiver_at, "alice", PASSPHRASES["alice"])
    with pytest.raises(ActionError) as err:
        load_signer(home, receiver_at, "alice", "not the passphrase")
    assert "wrong passphrase" in str(err.value) and "\n" not in str(err.value)
    assert "not the passphrase" not in str(err.value)


@pytest.mark.parametrize("name", ["", "a" * 33, "al ice", "al/ice", "../x", ".hidden", "-x", "é", "a\nb"])
def test_bad_names_are_refused(home, receiver_at, name):
    with pytest.raises(ActionError):
        add_operator(home, receiver_at, name, PASSPHRASES["alice"])
    assert list_operators(receiver_at) == []
    assert not home.operators.exists() or list(home.operators.iterdir()) == []


@pytest.mark.parametrize("name", ["a", "A" * 32, "field.ops_2-b"])
def test_good_names(home, receiver_at, name):
    info = add_operator(home, receiver_at, name, PASSPHRASES["alice"])
    assert info["name"] == name and info["active"] and len(info["fingerprint"]) == 64


def _signer(home, r, name):
    return load_signer(home, r, name, PASSPHRASES[name])


def test_names_are_never_reused_and_short_passphrases_refused(home, receiver_at):
    add_operator(home, receiver_at, "alice", PASSPHRASES["alice"])
    add_operator(home, receiver_at, "bob", PASSPHRASES["bob"], sponsor=_signer(home, receiver_at, "alice"), roles=ALL)
    retire(receiver_at, "alice", _signer(home, receiver_at, "bob"), "left the team")
    with pytest.raises(ActionError, match="never reused"):
        add_operator(home, receiver_at, "alice", "another passphrase", sponsor=_signer(home, receiver_at, "bob"))
    with pytest.raises(ActionError, match="at least 8"):
        add_operator(home, receiver_at, "carol", "short", sponsor=_signer(home, receiver_at, "bob"))
    assert [o["name"] for o in list_operators(receiver_at)] == ["alice", "bob"]
    assert not key_path(home, "carol").exists()


def test_retired_operator_cannot_sign_but_stays_listed(home, receiver_at):
    add_operator(home, receiver_at, "alice", PASSPHRASES["alice"], now=100.0)
    add_operator(home, receiver_at, "bob", PASSPHRASES["bob"], now=150.0, sponsor=_signer(home, receiver_at, "alice"), roles=ALL)
    bob = _signer(home, receiver_at, "bob")
    retire(receiver_at, "alice", bob, "left the team", now=200.0)
    with pytest.raises(ActionError, match="retired"):
        load_signer(home, receiver_at, "alice", PASSPHRASES["alice"])
    with pytest.raises(ActionError, match="already retired"):
        retire(receiver_at, "alice", bob, "again")
    with pytest.raises(ActionError, match="last active operator"):
        retire(receiver_at, "bob", bob, "nobody would be left to approve anyone")
    info = list_operators(receiver_at)[0]
    assert info["retired_at"] == 200.0 and not info["active"]


def test_loose_key_file_mode_and_swapped_key_file_are_refused(home, receiver_at):
    add_operator(home, receiver_at, "alice", PASSPHRASES["alice"])
    add_operator(home, receiver_at, "bob", PASSPHRASES["alice"], sponsor=_signer(home, receiver_at, "alice"), roles=ALL)
    path = key_path(home, "alice")
    path.chmod(0o644)
    with pytest.raises(ActionError, match="chmod 600"):
        load_signer(home, receiver_at, "alice", PASSPHRASES["alice"])
    path.chmod(0o600)
    # bob's file under alice's name: right passphrase, wrong key
    path.write_bytes(key_path(home, "bob").read_bytes())
    with pytest.raises(ActionError, match="does not match"):
        load_signer(home, receiver_at, "alice", PASSPHRASES["alice"])


def test_an_existing_key_file_is_never_overwritten(home, receiver_at):
    home.operators.mkdir(mode=0o700)
    key_path(home, "alice").write_bytes(b"precious")
    with pytest.raises(ActionError, match="already exists"):
        add_operator(home, receiver_at, "alice", PASSPHRASES["alice"])
    assert key_path(home, "alice").read_bytes() == b"precious"
    assert list_operators(receiver_at) == []  # the registration rolled back with it


def test_cli_add_list_retire(home, tmp_path, capsys):
    add_operators(home, tmp_path, "alice", "bob")
    capsys.readouterr()
    assert cli(home, "operator", "list", "--json") == 0
    rows = json_lines(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["alice", "bob"]
    assert all(r["active"] and r["retired_at"] is None for r in rows)
    assert sign(home, tmp_path, "operator", "retire", "bob", reason="left the team") == 0
    assert cli(home, "operator", "list") == 0
    out = capsys.readouterr().out
    assert "alice" in out and "active" in out and rows[0]["fingerprint"][:4] in out
    assert sign(home, tmp_path, "operator", "retire", "bob", reason="again") == 2
    assert "already retired" in capsys.readouterr().err


def test_cli_asks_twice_without_echo_and_never_logs_the_passphrase(home, monkeypatch, capsys, caplog):
    answers = iter(["typed passphrase 1", "typed passphrase 1"])
    prompts = []
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr(getpass, "getpass", lambda prompt: prompts.append(prompt) or next(answers))
    caplog.set_level(logging.DEBUG)
    assert cli(home, "operator", "add", "alice") == 0
    assert len(prompts) == 2
    captured = capsys.readouterr()
    for text in (captured.out, captured.err, caplog.text):
        assert "typed passphrase" not in text
    with Receiver(str(home.db)) as r:
        assert load_signer(home, r, "alice", "typed passphrase 1").name == "alice"

    # the approver's passphrase, then the new one mistyped three times: asked again, then given up
    answers = iter(["typed passphrase 1", *["first one 123", "second one 123"] * 3])
    assert cli(home, "operator", "add", "bob", "--operator", "alice", "--role", "resolver") == 2
    err = capsys.readouterr().err
    assert err.count("differ") == 3 and "nothing was created" in err
    assert prompts[-2:] == ["new passphrase for bob (at least 8 characters): ", "passphrase for bob (again): "]
    assert prompts.count("passphrase for alice (approving): ") == 1
    with Receiver(str(home.db)) as r:
        assert [o["name"] for o in list_operators(r)] == ["alice"]


def test_cli_asks_again_for_a_too_short_passphrase(home, monkeypatch, capsys):
    """A short passphrase is said at once and asked again, not checked after typing it twice."""
    answers = iter(["short", "long enough now", "long enough now"])
    prompts = []
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr(getpass, "getpass", lambda prompt: prompts.append(prompt) or next(answers))
    assert cli(home, "operator", "add", "carol") == 0
    assert len(prompts) == 3 and "at least 8" in prompts[0]
    assert "too short: 5 characters" in capsys.readouterr().err
    with Receiver(str(home.db)) as r:
        assert load_signer(home, r, "carol", "long enough now").name == "carol"


def test_cli_refuses_to_ask_without_a_terminal(home, tmp_path, capsys):
    # pytest's stdin is not a terminal: the passphrase would be read in the clear.
    assert cli(home, "operator", "add", "alice") == 2
    assert "--passphrase-file" in capsys.readouterr().err
    assert cli(home, "operator", "add", "alice", "--passphrase-file", str(tmp_path / "missing")) == 2
    assert "cannot read the passphrase file" in capsys.readouterr().err
    empty = passfile(tmp_path, "alice", "")
    assert cli(home, "operator", "add", "alice", "--passphrase-file", empty) == 2
    assert "empty first line" in capsys.readouterr().err
