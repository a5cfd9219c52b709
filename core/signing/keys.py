"""Operator keys: the signer, signature checks, and the passphrase-wrapped key files.

The private key never leaves ``<home>/operators/<name>.key`` unwrapped: it is
written in the OpenSSH private key format, encrypted with the passphrase
through OpenSSH's bcrypt KDF (``KDF_ROUNDS`` rounds, about a quarter of a
second a guess on the machine this was measured on) and AES-256, mode 0600.
A key file from before, PKCS8 wrapped with 2,048 rounds of PBKDF2, still
unlocks, and is re-wrapped in the slow format on its first good unlock.

``USSD_CONSOLE_KDF_ROUNDS`` lowers the rounds for the test suite only (every
test that adds an operator would otherwise pay the full cost); it is never
set in a real home's environment (docs/keys-and-unlock.md).
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
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

# cryptography's serialization (the key file formats and their ciphers) is imported by wrap and
# unwrap only: every command loads this module to check signatures (the retention policy in
# force), and that import was 3% of the instructions of `cases` or `audit verify`.

from core.home import PrivateFileError, read_private, sync_folder
from core.i18n import N_, MarkedError

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}", re.ASCII)
KEY_SUFFIX = ".key"
PROOF_DOMAIN = b"ussd-console operator key v1\n"
# bcrypt KDF rounds of a wrapped key: 32 took 0.28 s a guess on this project's 2-core machine under load.
KDF_ROUNDS = 32
KDF_ROUNDS_ENV = "USSD_CONSOLE_KDF_ROUNDS"
OPENSSH_BEGIN = b"-----BEGIN OPENSSH PRIVATE KEY-----"


class ActionError(MarkedError, ValueError):
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
        raise ActionError(N_("an operator name is 1-32 characters of letters, digits, '.', '_' or '-', "
                             "starting with a letter or digit"))
    return name


def public_key(hex_raw: str) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(bytes.fromhex(hex_raw))


def public_raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes_raw()


def verify_signature(public_hex: str, signature_hex: str, message: bytes) -> bool:
    try:
        public_key(public_hex).verify(bytes.fromhex(signature_hex), message)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def proof_message(seq: int, prev_hash: str, name: str, public_key_hex: str, sponsor: str) -> bytes:
    """What a new key signs to show its holder asked to be added, at this place of the chain."""
    fields = {"v": 1, "seq": int(seq), "prev_hash": prev_hash, "name": name, "public_key": public_key_hex,
              "sponsor": sponsor}
    return PROOF_DOMAIN + json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


# -- wrapping a key with its passphrase ------------------------------------------------
def kdf_rounds() -> int:
    """The bcrypt rounds new wrappings use: ``KDF_ROUNDS`` unless the test suite lowers them."""
    given = os.environ.get(KDF_ROUNDS_ENV)
    if not given:
        return KDF_ROUNDS
    try:
        rounds = int(given)
    except ValueError:
        rounds = 0
    if not 1 <= rounds <= 1000:
        raise ActionError(N_("%(variable)s must be a whole number from 1 to 1000, not %(given)s"),
                          variable=KDF_ROUNDS_ENV, given=repr(given[:20]))
    return rounds


def passphrase_bytes(passphrase: object) -> bytes:
    if not isinstance(passphrase, str) or not passphrase:
        raise ActionError(N_("a passphrase is required"))
    return passphrase.encode("utf-8")


def wrap(key: Ed25519PrivateKey, passphrase: str) -> bytes:
    """The key file's bytes: OpenSSH format, encrypted through the bcrypt KDF."""
    from cryptography.hazmat.primitives import serialization  # key files only: see the imports

    encryption = serialization.PrivateFormat.OpenSSH.encryption_builder().kdf_rounds(kdf_rounds()).build(
        passphrase_bytes(passphrase))
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, encryption)


def is_current_format(data: bytes) -> bool:
    """Whether a key file is wrapped the current way (else it is re-wrapped on a good unlock)."""
    return data.lstrip().startswith(OPENSSH_BEGIN)


def unwrap(data: bytes, name: str, passphrase: str) -> Ed25519PrivateKey:
    """The private key a key file holds, in either format; a wrong passphrase is a one-line error."""
    from cryptography.hazmat.primitives import serialization  # key files only: see the imports

    secret = passphrase_bytes(passphrase)
    try:
        if is_current_format(data):
            key = serialization.load_ssh_private_key(data, password=secret)
        else:
            key = serialization.load_pem_private_key(data, password=secret)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise ActionError(N_("wrong passphrase for operator %(name)s (or a damaged key file)"), name=name) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ActionError(N_("the key file for operator %(name)s does not hold an Ed25519 key"), name=name)
    return key


# -- key files ----------------------------------------------------------------------------
def key_path(home, name: str) -> Path:
    return Path(home.operators) / f"{check_name(name)}{KEY_SUFFIX}"


def _write_temporary(path: Path, data: bytes) -> Path:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return tmp


def write_key_file(path: Path, data: bytes) -> None:
    """Create the key file 0600 in the checked 0700 folder; never replace an existing one."""
    tmp = _write_temporary(path, data)
    try:
        os.link(tmp, path)  # fails if the name exists: a key file is never overwritten
    except FileExistsError:
        raise ActionError(N_("a key file already exists at %(path)s; move it away first"), path=str(path)) from None
    finally:
        os.unlink(tmp)
    sync_folder(path.parent)


def rewrap_key_file(path: Path, key: Ed25519PrivateKey, passphrase: str) -> None:
    """Replace a key file with the same key in the current wrapping, atomically (0600, folder synced)."""
    tmp = _write_temporary(path, wrap(key, passphrase))
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
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
            raise ActionError(N_("no operators folder at %(path)s; add an operator first"), path=str(path)) from None
        os.mkdir(path, 0o700)
        os.chmod(path, 0o700)  # whatever the umask
        info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise ActionError(N_("the operators folder %(path)s is a symbolic link; it must be a real folder inside the home"),
                          path=str(path))
    if not stat.S_ISDIR(info.st_mode):
        raise ActionError(N_("%(path)s is not a folder; the operators folder must be a real folder inside the home"),
                          path=str(path))
    if info.st_mode & 0o077:
        raise ActionError(N_("the operators folder %(path)s is open to others (mode %(mode)s); run: chmod 700 %(path)s"),
                          path=str(path), mode=f"{info.st_mode & 0o777:04o}")
    return path


def read_key_file(path: Path) -> bytes:
    """The key file's bytes, under the checks every owner-only file gets (``core.home.read_private``)."""
    try:
        return read_private(path, "the key file")
    except PrivateFileError as exc:
        if exc.missing:
            raise ActionError(N_("no key file for this operator at %(path)s"), path=str(path)) from None
        raise ActionError(exc.message, **exc.values) from None
