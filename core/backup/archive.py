"""The backup file's format: its name, its members and manifest, and the two ways a check fails.

One backup file is a tar of a consistent store snapshot (SQLite) or a ``pg_dump`` (PostgreSQL),
the operators' key files, config.toml and a manifest that lists every member's SHA-256;
encrypted to age recipients when any are configured. ``make`` writes one, ``verify`` checks
one whole and ``restore`` lays one out as a home: this module is what the three share.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from core.home import DB_NAME
from core.i18n import MarkedError

FORMAT = "ussd-backup v1"
MANIFEST = "manifest.json"
STORE = DB_NAME
CONFIG = "config.toml"
KEYS = "operators"
AGE_MAGIC = b"age-encryption.org/v1\n"
SUFFIX_PLAIN = ".tar.gz"
SUFFIX_AGE = ".tar.gz.age"
PREFIX = "ussd-backup-"
TMP_SUFFIX = ".tmp"
HOLD_ENV = "USSD_TEST_BACKUP_HOLD"  # tests only: a folder where each step waits for its marker to go
SMALL_MAX = 1 << 20  # the manifest, config.toml and each file under operators/ are at most this
# A file under operators/ is backed up (and restored) only under a plain name: no dot first, no
# folder, nothing a shell or a path could read as more than a name.
KEY_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", re.ASCII)


class BackupError(MarkedError):
    """The backup is damaged or does not prove what it should: exit 1 with these words."""


class CannotRun(MarkedError):
    """The check cannot be made at all (no file, no identity): exit 2 with these words."""


def key_file_name(name: str) -> bool:
    """Whether a file under operators/ with this name goes into a backup."""
    return bool(KEY_FILE_NAME.fullmatch(name))


def known_member(name: str, store: str) -> bool:
    """Whether ``name`` is a member ``backup`` writes, beside the manifest: the store member
    ``store`` (the SQLite snapshot or the PostgreSQL dump), config.toml, or a file under operators/.
    Nothing else is accepted, so whatever verifies is something ``restore`` can lay out."""
    if name in (store, CONFIG):
        return True
    folder, slash, rest = name.partition("/")
    return folder == KEYS and bool(slash) and key_file_name(rest)


def sha256_file(path: Path) -> str:
    """A member's SHA-256, read a megabyte at a time (a store can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def store_kind(manifest: dict) -> str:
    """``sqlite`` or ``postgresql``: backups made before PostgreSQL stores were backed up say nothing."""
    return "postgresql" if manifest.get("store_kind") == "postgresql" else "sqlite"
