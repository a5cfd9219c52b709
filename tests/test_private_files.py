"""Every owner-only file the receiver reads (an operator's key file, a gateway's secret, a passphrase
file) goes through one ``read_private`` and so meets one set of checks: no symbolic link, a
regular file (a passphrase may come through a named pipe), owner-only mode, a size bound."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.gateways.accounts import GatewayError, read_secret
from core.home import PrivateFileError, read_private
from core.signing.keys import ActionError, read_key_file
from tests.support.cli import cli
from tests.support.signing import PASS


def key_file(path: Path, home) -> str | None:
    try:
        read_key_file(path)
    except ActionError as exc:
        return str(exc)
    return None


def secret_file(path: Path, home) -> str | None:
    try:
        read_secret(str(path))
    except GatewayError as exc:
        return str(exc)
    return None


def passphrase_file(path: Path, home) -> str | None:
    ran = cli(home, "operator", "add", "alice", "--passphrase-file", str(path))
    assert "Traceback" not in ran.stderr
    return None if ran.returncode == 0 else ran.stderr.strip()


READERS = [key_file, secret_file, passphrase_file]


def private(path: Path, text: str = PASS + "\n", mode: int = 0o600) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


@pytest.mark.parametrize("reader", READERS)
def test_a_private_regular_file_is_read(reader, home, tmp_path):
    assert reader(private(tmp_path / "file"), home) is None


@pytest.mark.parametrize("reader", READERS)
def test_a_symbolic_link_is_never_followed(reader, home, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(private(tmp_path / "file"))
    assert "is a symbolic link" in reader(link, home)


@pytest.mark.parametrize("reader", READERS)
def test_a_file_open_to_others_is_refused_with_the_chmod_to_run(reader, home, tmp_path):
    said = reader(private(tmp_path / "file", mode=0o640), home)
    assert "open to others (mode 0640)" in said and "chmod 600" in said


@pytest.mark.parametrize("reader", READERS)
def test_a_folder_is_not_a_regular_file(reader, home, tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir(mode=0o700)
    assert "is not a regular file" in reader(folder, home)


@pytest.mark.parametrize("reader", [key_file, secret_file])
def test_a_named_pipe_is_refused_at_once_where_no_pipe_is_wanted(reader, home, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)  # nobody writes it: a reader that waited on it would hang here
    assert "is not a regular file" in reader(fifo, home)


@pytest.mark.parametrize("reader", READERS)
def test_a_missing_file_is_named(reader, home, tmp_path):
    said = reader(tmp_path / "missing", home)
    assert "missing" in said and ("no key file" in said or "cannot read" in said)


def test_a_file_over_the_bound_is_refused_whole(tmp_path):
    path = private(tmp_path / "big", "x" * 4097)
    with pytest.raises(GatewayError, match="larger than 4096 bytes"):
        read_secret(str(path))
    assert read_private(private(tmp_path / "fits", "x" * 4096), "the file", limit=4096) == b"x" * 4096
    with pytest.raises(PrivateFileError) as missing:
        read_private(tmp_path / "none", "the file")
    assert missing.value.missing and not PrivateFileError("x").missing
