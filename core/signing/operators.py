"""Operators: a name, an Ed25519 key pair, and a passphrase that unlocks the private half.

The private key never leaves ``<home>/operators/<name>.key`` unencrypted: it is
written as PKCS8 encrypted with the passphrase (``BestAvailableEncryption``,
which in this ``cryptography`` release is PBES2 with PBKDF2-HMAC-SHA256 and
AES-256-CBC), mode 0600. The public half is registered in the store, so old
signatures stay verifiable after a key is retired.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from core.store.database import write_transaction

from .audit_models import audit_models

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}", re.ASCII)
PASSPHRASE_MIN = 8
KEY_SUFFIX = ".key"


class ActionError(ValueError):
    """An operator or signed action was refused; nothing changed. The message is one line."""


@dataclass(frozen=True)
class Signer:
    """An unlocked operator key, held only as long as one action needs it."""

    name: str
    fingerprint: str
    _key: Ed25519PrivateKey

    def sign(self, message: bytes) -> bytes:
        return self._key.sign(message)

    def __repr__(self) -> str:  # never show key material, even in a traceback
        return f"Signer({self.name!r}, {self.fingerprint[:16]})"


def fingerprint(public_raw: bytes) -> str:
    return hashlib.sha256(public_raw).hexdigest()


def short_fingerprint(fp: str) -> str:
    """The first 64 bits in groups of four, for people to compare by eye."""
    return " ".join(fp[i : i + 4] for i in range(0, 16, 4))


def check_name(name: object) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ActionError(
            "an operator name is 1-32 characters of letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def public_key(hex_raw: str) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(bytes.fromhex(hex_raw))


def verify_signature(public_hex: str, signature_hex: str, message: bytes) -> bool:
    try:
        public_key(public_hex).verify(bytes.fromhex(signature_hex), message)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def key_path(home, name: str) -> Path:
    return Path(home.operators) / f"{check_name(name)}{KEY_SUFFIX}"


def _passphrase_bytes(passphrase: object) -> bytes:
    if not isinstance(passphrase, str) or not passphrase:
        raise ActionError("a passphrase is required")
    return passphrase.encode("utf-8")


def _operator_row(receiver, name: str):
    O = audit_models(receiver.db).Operator
    return O.get_or_none(O.name == name)


def _write_key_file(path: Path, data: bytes) -> None:
    """Create the key file 0600 in a 0700 folder; never replace an existing one."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # fails if the name exists: a key file is never overwritten
    except FileExistsError:
        raise ActionError(f"a key file already exists at {path}; move it away first") from None
    finally:
        os.unlink(tmp)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def add_operator(home, receiver, name: str, passphrase: str, now: float | None = None) -> dict:
    """Create a key pair for a new operator and register its public half."""
    check_name(name)
    secret = _passphrase_bytes(passphrase)
    if len(passphrase) < PASSPHRASE_MIN:
        raise ActionError(f"the passphrase must be at least {PASSPHRASE_MIN} characters")
    key = Ed25519PrivateKey.generate()
    public_raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(secret),
    )
    fp = fingerprint(public_raw)
    path = key_path(home, name)
    O = audit_models(receiver.db).Operator
    written = False
    try:
        with write_transaction(receiver.db):
            if O.select().where(O.name == name).exists():
                raise ActionError(
                    f"operator {name} already exists; names are never reused, so old signatures stay attributable"
                )
            O.create(name=name, public_key=public_raw.hex(), fingerprint=fp,
                     added_at=time.time() if now is None else float(now))
            _write_key_file(path, pem)
            written = True
    except BaseException:
        if written:
            path.unlink(missing_ok=True)
        raise
    return operator_info(receiver, name)


def _as_info(row) -> dict:
    return {
        "name": row.name,
        "fingerprint": row.fingerprint,
        "added_at": row.added_at,
        "retired_at": row.retired_at,
        "active": row.retired_at is None,
    }


def operator_info(receiver, name: str) -> dict:
    row = _operator_row(receiver, name)
    if row is None:
        raise ActionError(f"no operator named {name}")
    return _as_info(row)


def list_operators(receiver, include_retired: bool = True) -> list[dict]:
    O = audit_models(receiver.db).Operator
    q = O.select().order_by(O.added_at, O.id)
    if not include_retired:
        q = q.where(O.retired_at.is_null())
    return [_as_info(row) for row in q]


def retire_operator(receiver, name: str, now: float | None = None) -> dict:
    """Stop a key from signing; its public half stays for verifying what it signed."""
    check_name(name)
    O = audit_models(receiver.db).Operator
    with write_transaction(receiver.db):
        row = O.get_or_none(O.name == name)
        if row is None:
            raise ActionError(f"no operator named {name}")
        if row.retired_at is not None:
            raise ActionError(f"operator {name} is already retired")
        O.update(retired_at=time.time() if now is None else float(now)).where(O.id == row.id).execute()
    return operator_info(receiver, name)


def active_operator(receiver, name: str):
    """The registered row of an operator allowed to sign now, or a one-line refusal."""
    check_name(name)
    row = _operator_row(receiver, name)
    if row is None:
        raise ActionError(f"no operator named {name}")
    if row.retired_at is not None:
        raise ActionError(f"operator {name} is retired and can no longer sign")
    return row


def _read_key_file(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise ActionError(f"no key file for this operator at {path}") from None
    except OSError as exc:
        raise ActionError(f"cannot open the key file {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ActionError(f"the key file {path} is not a regular file")
        if info.st_mode & 0o077:
            raise ActionError(
                f"the key file {path} is readable by others (mode {info.st_mode & 0o777:04o}); "
                f"run: chmod 600 {path}"
            )
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def load_signer(home, receiver, name: str, passphrase: str) -> Signer:
    """Unlock an active operator's key; a wrong passphrase is a one-line error."""
    row = active_operator(receiver, name)
    secret = _passphrase_bytes(passphrase)
    data = _read_key_file(key_path(home, name))
    try:
        key = serialization.load_pem_private_key(data, password=secret)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise ActionError(f"wrong passphrase for operator {name} (or a damaged key file)") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ActionError(f"the key file for operator {name} does not hold an Ed25519 key")
    public_raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    if public_raw.hex() != row.public_key:
        raise ActionError(f"the key file for operator {name} does not match the key registered in the store")
    return Signer(name, row.fingerprint, key)
