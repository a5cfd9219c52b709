"""Operators: a name, an Ed25519 key pair, and a passphrase that unlocks the private half.

The private key never leaves ``<home>/operators/<name>.key`` unencrypted: it is
written as PKCS8 encrypted with the passphrase (``BestAvailableEncryption``,
which in this ``cryptography`` release is PBES2 with PBKDF2-HMAC-SHA256 and
AES-256-CBC), mode 0600. The public half is registered in the store, so old
signatures stay verifiable after a key is retired.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from core.home import sync_folder
from core.store.database import write_transaction

from .audit_models import audit_models

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}", re.ASCII)
PASSPHRASE_MIN = 8
KEY_SUFFIX = ".key"
# Adding, retiring and adopting operators are entries of the audit chain (docs/rules.md#operators-and-signatures).
OPERATOR_ADD = "operator.add"
OPERATOR_RETIRE = "operator.retire"
OPERATOR_ADOPT = "operator.adopt"
ADD_REASON = "new operator"
PROOF_DOMAIN = b"ussd-console operator key v1\n"


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
    """Create the key file 0600 in the checked 0700 folder; never replace an existing one."""
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
    sync_folder(path.parent)


def operators_folder(home, create: bool = False) -> Path:
    """The key folder: a real 0700 folder inside the home, never a symlink to elsewhere.

    A folder others can read or write is refused (with the chmod to run), not
    silently fixed: whoever opened it may already have swapped a key file.
    """
    path = Path(home.operators)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if not create:
            raise ActionError(f"no operators folder at {path}; add an operator first") from None
        os.mkdir(path, 0o700)
        os.chmod(path, 0o700)  # whatever the umask
        info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise ActionError(f"the operators folder {path} is a symbolic link; it must be a real folder inside the home")
    if not stat.S_ISDIR(info.st_mode):
        raise ActionError(f"{path} is not a folder; the operators folder must be a real folder inside the home")
    if info.st_mode & 0o077:
        raise ActionError(
            f"the operators folder {path} is open to others (mode {info.st_mode & 0o777:04o}); run: chmod 700 {path}"
        )
    return path


def proof_message(seq: int, prev_hash: str, name: str, public_key_hex: str, sponsor: str) -> bytes:
    """What a new key signs to show its holder asked to be added, at this place of the chain."""
    fields = {"v": 1, "seq": int(seq), "prev_hash": prev_hash, "name": name, "public_key": public_key_hex,
              "sponsor": sponsor}
    return PROOF_DOMAIN + json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def add_payload(seq: int, prev_hash: str, name: str, key: Ed25519PrivateKey, sponsor: str) -> dict:
    """The signed payload of an ``operator.add`` entry: the new public key and its proof of possession."""
    public_raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    proof = key.sign(proof_message(seq, prev_hash, name, public_raw.hex(), sponsor))
    return {"name": name, "public_key": public_raw.hex(), "fingerprint": fingerprint(public_raw),
            "key_proof": proof.hex()}


def _signed_operator_entries(receiver) -> bool:
    """Whether the log already records operator changes (a store from before them has none)."""
    E = audit_models(receiver.db).AuditEntry
    return E.select().where(E.action.in_((OPERATOR_ADD, OPERATOR_ADOPT))).exists()


def add_operator(home, receiver, name: str, passphrase: str, now: float | None = None, *,
                 sponsor: Signer | None = None, reason: str = ADD_REASON) -> dict:
    """Create a key pair for a new operator and register it with a signed ``operator.add`` entry.

    The first operator of a store signs its own entry; every later one is
    approved by an active operator (``sponsor``), and the new key signs its
    proof of possession inside the entry, so neither can add a key alone.
    """
    from . import audit

    check_name(name)
    secret = _passphrase_bytes(passphrase)
    if len(passphrase) < PASSPHRASE_MIN:
        raise ActionError(f"the passphrase must be at least {PASSPHRASE_MIN} characters")
    reason = audit.check_reason(reason)
    folder = operators_folder(home, create=True)
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
            first = not O.select().exists()
            if not first and not _signed_operator_entries(receiver):
                raise ActionError("this store's operators were added before operator changes were signed; "
                                  "run `ussd-console operator adopt --operator NAME` first")
            if first:
                signer = Signer(name, fp, key)
            elif sponsor is None:
                raise ActionError("a new operator is approved by an active one: name them with --operator NAME")
            else:
                active_operator(receiver, sponsor.name)  # not retired since the key was unlocked
                signer = sponsor
            current = audit.head(receiver)
            payload = add_payload(current.count + 1, current.hash, name, key, signer.name)
            entry = audit.append(receiver, signer, OPERATOR_ADD, f"operator:{name}", reason, payload, now=now)
            O.create(name=name, public_key=public_raw.hex(), fingerprint=fp, added_at=entry["at"])
            _write_key_file(folder / path.name, pem)
            written = True
    except BaseException:
        if written:
            path.unlink(missing_ok=True)
        raise
    return {**operator_info(receiver, name), "entry": entry}


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


def retire_operator(receiver, name: str, signer: Signer, reason: str, now: float | None = None) -> dict:
    """Stop a key from signing, signed by an active operator; its public half stays for verifying."""
    from . import audit

    check_name(name)
    reason = audit.check_reason(reason)
    O = audit_models(receiver.db).Operator
    with write_transaction(receiver.db):
        row = O.get_or_none(O.name == name)
        if row is None:
            raise ActionError(f"no operator named {name}")
        if row.retired_at is not None:
            raise ActionError(f"operator {name} is already retired")
        active_operator(receiver, signer.name)
        if not _signed_operator_entries(receiver):
            raise ActionError("this store's operators were added before operator changes were signed; "
                              "run `ussd-console operator adopt --operator NAME` first")
        if not O.select().where(O.retired_at.is_null() & (O.id != row.id)).exists():
            raise ActionError(f"{name} is the last active operator; add another one before retiring this one")
        entry = audit.append(receiver, signer, OPERATOR_RETIRE, f"operator:{name}", reason,
                             {"name": name, "fingerprint": row.fingerprint}, now=now)
        O.update(retired_at=entry["at"]).where(O.id == row.id).execute()
    return {**operator_info(receiver, name), "entry": entry}


def adoption_list(receiver) -> list[dict]:
    """The operator rows an adoption would sign, as they stand in the table."""
    O = audit_models(receiver.db).Operator
    return [{"name": r.name, "public_key": r.public_key, "fingerprint": r.fingerprint, "added_at": r.added_at,
             "retired_at": r.retired_at} for r in O.select().order_by(O.id)]


def adopt_operators(receiver, signer: Signer, reason: str, now: float | None = None,
                    expected: list[dict] | None = None) -> dict:
    """Bring the operators of a store from before signed operator changes into the log, once.

    One active operator signs the list of every registered operator and key as
    the table holds them; verify then checks the older entries against that
    signed list instead of the unsigned table. ``expected`` is the list shown
    to the operator: anything else is not signed.
    """
    from . import audit

    reason = audit.check_reason(reason)
    with write_transaction(receiver.db):
        if _signed_operator_entries(receiver):
            raise ActionError("the operators are already in the signed log; there is nothing to adopt")
        active_operator(receiver, signer.name)
        listed = adoption_list(receiver)
        if expected is not None and listed != expected:
            raise ActionError("the operators changed since they were shown; review them again before signing")
        entry = audit.append(receiver, signer, OPERATOR_ADOPT, "operators", reason, {"operators": listed}, now=now)
    return {"entry": entry, "operators": listed}


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
    operators_folder(home)
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
