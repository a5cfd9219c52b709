"""Which home made a backup, and whether it counts as this home's.

Anyone can recompute the manifest's SHA-256 values, so they prove a backup whole, never where it
came from. A backup's manifest is therefore signed (Ed25519) by the home's own backup key, kept
owner-only in the home as ``backup-signing.key`` and never put in a backup: someone who holds
only the file cannot sign a changed manifest. The key is trusted as this home's when it is the
home's own key file, or when the home's signed audit log recorded it (``backup key record``, an
admin's entry, so the checkpoint line carries it). On a machine that has nothing else of the home
the trust anchor is given: a checkpoint kept off the machine, or the key's fingerprint.

A backup that verifies *counts* for a home (clears "backup overdue", is "last verified") only when
its manifest names that home's id and its audit chain is a prefix of the home's live chain.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from core.i18n import N_, MarkedError
from core.rules.text import worded

from .archive import BackupError, CannotRun

KEY_NAME = "backup-signing.key"
DOMAIN = b"ussd-console backup manifest v1\n"
FP_MIN = 12  # hex digits of a fingerprint given by hand

UNSIGNED = N_("manifest not signed: nothing proves which home made this backup, nor that its config.toml and "
               "key files are the ones it was made with (backups made before manifests were signed are so too); "
               "make a new backup of the live home, or, with no other copy left, restore it with --accept-unsigned "
               "and read config.toml and the operators' keys before `alerts resume`")


def key_path(home) -> Path:
    return Path(home.root) / KEY_NAME


def _private(raw_hex: str):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(raw_hex))


def load_key(home, create: bool = False):
    """The home's backup signing key; made (owner-only, never through a link) when missing and
    ``create``, else None. Two processes making it at once end with the same key."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from core.home import open_private, sync_folder

    path = key_path(home)
    for _ in range(2):
        try:
            text = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            text = None
        except (OSError, UnicodeDecodeError) as exc:
            raise CannotRun(N_("cannot read the home's backup key %(path)s: %(reason)s"),
                            path=path, reason=getattr(exc, 'strerror', None) or exc) \
                from None
        if text is not None:
            try:
                return _private(text)
            except ValueError:
                raise CannotRun(N_("the home's backup key %(path)s is damaged (not 64 hex digits)"), path=path) from None
        if not create:
            return None
        raw = Ed25519PrivateKey.generate().private_bytes_raw().hex()
        tmp = path.with_name(f".{KEY_NAME}.{os.getpid()}.tmp")
        fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "w") as out:
            out.write(raw + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, path)  # never over a key another process made meanwhile
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
        sync_folder(path.parent)
    raise CannotRun(N_("cannot make the home's backup key %(path)s"), path=path)


def public_hex(key) -> str:
    return key.public_key().public_bytes_raw().hex()


def fingerprint_of(public: str) -> str:
    from core.signing.keys import fingerprint

    return fingerprint(bytes.fromhex(public))


def _message(manifest: dict) -> bytes:
    from core.signing.audit import canonical_json

    return DOMAIN + canonical_json({k: v for k, v in manifest.items() if k != "signature"}).encode("ascii")


def sign(manifest: dict, key) -> dict:
    """The manifest with the home's backup key and its signature over every other field."""
    signed = {**manifest, "backup_key": public_hex(key)}
    return {**signed, "signature": key.sign(_message(signed)).hex()}


@dataclass(frozen=True)
class Trust:
    """The backup keys a check accepts as this home's: whole fingerprints (the home's key file,
    the keys its log recorded) or prefixes given by hand (``--backup-key``, a checkpoint's
    ``backup=``). ``checkpoint``: the backup's chain must extend it when it is as long."""

    keys: frozenset = frozenset()
    prefixes: tuple = ()
    checkpoint: object = None
    accept_unsigned: bool = False
    live_home: bool = False  # the keys are a live home's (which may have made no backup yet)

    def trusts(self, fp: str) -> bool:
        return fp in self.keys or any(fp.startswith(p) for p in self.prefixes)

    @property
    def empty(self) -> bool:
        return not self.keys and not self.prefixes


def check_signature(manifest: dict, trust: Trust) -> str | None:
    """Refuse a manifest this home's backup key did not sign (``BackupError``); with no anchor at
    all, the check cannot be made (``CannotRun``). Returns a note when an unsigned backup was let
    through on purpose (``accept_unsigned``)."""
    from core.signing.keys import short_fingerprint, verify_signature

    pub, sig = manifest.get("backup_key"), manifest.get("signature")
    if not isinstance(pub, str) or not isinstance(sig, str):
        if trust.accept_unsigned:
            return worded(N_("the backup's origin: its manifest is not signed (accepted with --accept-unsigned)"))
        raise BackupError(UNSIGNED)
    try:
        fp = fingerprint_of(pub)
    except ValueError:
        raise BackupError(N_("not made by this home: the manifest names a backup key that does not read")) from None
    if not verify_signature(pub, sig, _message(manifest)):
        raise BackupError(N_("not made by this home: the manifest's signature does not match it (the manifest "
                             "was changed after it was signed)"))
    if trust.empty and trust.live_home:
        raise BackupError(N_("not made by this home: this home has made no backup yet, so it has no backup key "
                             "(on a machine with nothing else of the home, give --checkpoint or --backup-key)"))
    if trust.empty:
        raise CannotRun(N_("cannot tell whether this home made the backup: no backup key of this home is known "
                           "here; give --checkpoint FILE (a checkpoint kept off the machine) or --backup-key "
                           "FINGERPRINT"))
    if not trust.trusts(fp):
        raise BackupError(N_("not made by this home: the manifest is signed by backup key %(key)s, which is not"
                             " this home's"), key=short_fingerprint(fp))
    return None


def _key_prefix(text: str) -> str:
    value = "".join(str(text).split()).lower()
    if len(value) < FP_MIN or len(value) > 64 or not set(value) <= set("0123456789abcdef"):
        raise CannotRun(N_("--backup-key is the backup key's fingerprint: %(least)s to 64 hex digits "
                           "(`ussd-console backup key` prints it)"), least=FP_MIN)
    return value


def trust_given(backup_key: str | None = None, checkpoint_source: str | None = None,
                accept_unsigned: bool = False) -> Trust:
    """The anchors given on the command line: a fingerprint, a checkpoint (a file, - for stdin, or
    the line itself)."""
    from core.signing import checkpoint as checkpoint_

    prefixes, cp = [], None
    if backup_key:
        prefixes.append(_key_prefix(backup_key))
    if checkpoint_source:
        try:
            source = checkpoint_source.strip()
            cp = checkpoint_.parse(source) if source.startswith((checkpoint_.MAGIC, "{")) \
                else checkpoint_.read(checkpoint_source)
        except checkpoint_.CheckpointError as exc:
            if isinstance(exc, MarkedError):  # its own words and values, translated where shown
                raise CannotRun(exc.message, **exc.values) from None
            raise CannotRun(str(exc)) from None
        if not cp.backup:
            raise CannotRun(N_("the checkpoint carries no backup key (it was taken before this home's backup "
                               "key was recorded with `backup key record`): give a checkpoint taken since, or "
                               "--backup-key FINGERPRINT"))
        prefixes.append(cp.backup)
    return Trust(prefixes=tuple(prefixes), checkpoint=cp, accept_unsigned=accept_unsigned)


def trust_of_home(home, store_target: str | None, also: Trust | None = None) -> Trust:
    """What this home trusts: its own key file and every backup key its log recorded (with the
    anchors given by hand, if any)."""
    keys = set()
    key = load_key(home) if Path(home.root).is_dir() else None
    if key is not None:
        keys.add(fingerprint_of(public_hex(key)))
    db = _open(store_target)
    if db is not None:
        from core.signing.backup_key import recorded

        try:
            keys.update(recorded(db))
        finally:
            db.close()
    also = also or Trust()
    return Trust(keys=frozenset(keys) | also.keys, prefixes=also.prefixes, checkpoint=also.checkpoint,
                 accept_unsigned=also.accept_unsigned, live_home=db is not None)


def _open(store_target: str | None):
    """The live store's database, read only; None when there is none to read."""
    from core.store.backend import is_postgres_url

    if not store_target or (not is_postgres_url(store_target) and not os.path.exists(store_target)):
        return None
    from core.receiver import open_store

    try:
        db, _m = open_store(store_target, create=False)
    except Exception:  # noqa: BLE001 - no store to read: nothing of it is trusted
        return None
    return db


def check_chain(receiver, manifest: dict, trust: Trust | None) -> str | None:
    """The store in a backup is of the home its manifest names; with a checkpoint given, its audit
    chain extends that checkpoint (when it is as long). Returns a note of what was not checked."""
    from core.signing import audit
    from core.store.home_identity import home_id

    named = manifest.get("home_id")
    if named is not None and home_id(receiver.db) != named:
        raise BackupError(N_("the store in the backup is of another home than its manifest names"))
    cp = trust.checkpoint if trust is not None else None
    if cp is None:
        return None
    count = audit.head(receiver).count
    if count < cp.count:
        return worded(N_("the audit chain against the checkpoint given: the backup holds %(count)s entries, the "
                         "checkpoint recorded %(recorded)s (the backup is older); run %(command)s once it is restored"),
                      count=count, recorded=cp.count, command="`audit verify --checkpoint`")
    result = audit.verify(receiver, checkpoint=cp)
    if not result.ok:
        raise BackupError(N_("the audit log in the backup does not extend the checkpoint given: %(why)s"),
                          why=result.why)
    return None


def counts_for(store_target: str | None, manifest: dict) -> str | None:
    """Why a verified backup does not count for the home whose store is ``store_target``, or None:
    it names that home's id, and its audit chain is a prefix of the live one."""
    from core.store.home_identity import home_id

    db = _open(store_target)
    if db is None:
        return worded(N_("this home has no store to compare it with"))
    try:
        live = home_id(db)
        if not manifest.get("home_id") or manifest.get("home_id") != live:
            return worded(N_("it is a backup of another home (its home id is not this home's)"))
        head = manifest.get("audit_head") or {}
        count, digest = head.get("count"), head.get("hash")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            return worded(N_("its manifest records no audit head"))
        if count:
            row = db.execute_sql(f"SELECT hash FROM audit_log WHERE seq = {db.param}", (count,)).fetchone()
            if row is None or row[0] != digest:
                return worded(N_("its audit chain is not a prefix of this home's (entry #%(entry)s differs or is "
                                 "missing): it is of a copy of this home that went its own way"), entry=count)
    finally:
        db.close()
    return None


def verified_at(made_at: object, now: float | None = None) -> float:
    """When a verified backup counts as made: its signed date, or the verify time when that is later
    (a date in the future never hides what happens until then)."""
    now = time.time() if now is None else now
    if isinstance(made_at, bool) or not isinstance(made_at, (int, float)) or made_at != made_at:
        return now
    return min(float(made_at), now)


def describe_key(home, store_target: str | None) -> dict:
    """The home's backup key (made when missing) and whether its log recorded it: ``backup key``."""
    key = load_key(home, create=True)
    pub = public_hex(key)
    fp = fingerprint_of(pub)
    db = _open(store_target)
    recorded_keys: list = []
    if db is not None:
        from core.signing.backup_key import recorded

        try:
            recorded_keys = recorded(db)
        finally:
            db.close()
    return {"file": str(key_path(home)), "public_key": pub, "fingerprint": fp,
            "recorded": fp in recorded_keys, "in_force": bool(recorded_keys) and recorded_keys[-1] == fp,
            "recorded_keys": recorded_keys}

