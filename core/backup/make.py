"""Writing one backup file (``make_backup``): a consistent snapshot, the key files and config,
their manifest; checked before it is encrypted and named when asked.

The SQLite snapshot comes from the online backup API (a file copy of a live store can mix old
and new pages). The file is written under a temporary name, fsynced, renamed and its folder
fsynced, so a backup killed at any moment leaves nothing under a final name.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sqlite3
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from core.home import sync_folder
from core.i18n import N_
from core.urls import mask_in

from . import origin, pg
from .archive import (
    CONFIG, FORMAT, HOLD_ENV, KEYS, MANIFEST, PREFIX, STORE, SUFFIX_AGE, SUFFIX_PLAIN, TMP_SUFFIX, CannotRun,
    key_file_name, sha256_file,
)
from .verify import verify_into

@dataclass(frozen=True)
class Made:
    file: Path
    size: int
    encrypted: bool
    manifest: dict


def _hold(step: str) -> None:
    """For the kill-at-any-moment test: wait at ``step`` while its marker file exists."""
    folder = os.environ.get(HOLD_ENV)
    if not folder:
        return
    marker = Path(folder) / f"{os.getpid()}-{step}.held"
    marker.write_text(step)
    while marker.exists():
        time.sleep(0.01)


def snapshot_sqlite(source: str, dest: Path) -> None:
    """A consistent copy of a live store through the online backup API (never a file copy)."""
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=60)
    try:
        dst = sqlite3.connect(dest)
        try:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
        finally:
            dst.close()
    finally:
        src.close()


def _settle(store_target: Path) -> None:
    """One self-contained file: no -wal or -shm beside it."""
    con = sqlite3.connect(store_target)
    try:
        con.execute("PRAGMA journal_mode=DELETE")
    finally:
        con.close()


def describe_store(store_target: Path) -> dict:
    """The manifest's figures of a store snapshot: schema, counts and the audit checkpoint."""
    from core.receiver import Receiver

    con = sqlite3.connect(f"file:{store_target}?mode=ro", uri=True)
    try:
        schema = con.execute("SELECT max(version) FROM schema_version").fetchone()[0]
    finally:
        con.close()
    receiver = Receiver(str(store_target))
    try:
        return describe_receiver(receiver, schema)
    finally:
        receiver.close()


def describe_receiver(receiver, schema: int) -> dict:
    """Counts and the audit checkpoint of an open store (SQLite snapshot or PostgreSQL)."""
    from types import SimpleNamespace

    from core.signing import audit
    from core.store.home_identity import home_id

    totals = receiver.totals()
    result, cp = audit.make_checkpoint(receiver)
    head = audit.head(SimpleNamespace(db=receiver.db))
    return {
        "schema_version": schema,
        "home_id": home_id(receiver.db),  # the home it is of, and how far its chain went: what makes it count
        "audit_head": {"count": head.count, "hash": head.hash},
        "counts": {"cases": totals.cases, "frames_kept": totals.seen_frames,
                   "conflicts_open": totals.conflicts_open, "audit_entries": head.count},
        "checkpoint": cp.line() if cp is not None else None,
        "audit_problem": None if cp is not None else result.why,
    }


def _dump_postgres(url: str, dest: Path) -> dict:
    """``pg_dump`` of a PostgreSQL store, and the manifest's figures of the same moment."""
    from core.receiver import Receiver
    from core.rules.text import one_line

    try:
        receiver = Receiver(url, create=False)
    except Exception as exc:  # noqa: BLE001 - StoreError, psycopg's errors: one masked line, exit 2
        raise CannotRun(N_("cannot open the PostgreSQL store: %(reason)s"), reason=mask_in(one_line(exc), url)) from None
    try:
        schema = receiver.db.execute_sql("SELECT max(version) FROM schema_version").fetchone()[0]
        return pg.dump(url, dest, lambda: describe_receiver(receiver, schema))
    except pg.PgError as exc:
        raise CannotRun(exc.message, **exc.values) from None
    finally:
        receiver.close()


def _key_files(home) -> list[Path]:
    folder = Path(home.operators)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and key_file_name(p.name)
                  and not p.name.lower().endswith((".tmp", ".part", ".partial")))


def _software_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("ussd-console")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, when: float) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), int(when), 0o600
    tar.addfile(info, io.BytesIO(data))


def _add_file(tar: tarfile.TarFile, name: str, path: Path, when: float) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = path.stat().st_size, int(when), 0o600
    with open(path, "rb") as fh:
        tar.addfile(info, fh)


def _recipients(texts) -> list:
    from pyrage import x25519

    return [x25519.Recipient.from_str(t) for t in texts]


WORK_PREFIX = ".ussd-backup-work-"
STALE_AFTER = 86400.0


def _remove_stale_work(root: Path) -> None:
    """Work folders a killed backup left in the home more than a day ago."""
    import shutil

    for entry in root.glob(f"{WORK_PREFIX}*"):
        try:
            if entry.is_dir() and time.time() - entry.stat().st_mtime > STALE_AFTER:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue


def make_backup(home, store_target: str, folder: Path, recipients=(), now: float | None = None,
                check: bool = False) -> Made:
    """Write one backup file into ``folder``; return where and what it holds. With ``check``, the
    archive is verified (``verify_into``) before it is encrypted and given its final name."""
    from core.store.backend import is_postgres_url

    postgres = is_postgres_url(store_target)
    if not postgres and not os.path.exists(store_target):
        raise CannotRun(N_("no store at %(store)s"), store=store_target)
    now = time.time() if now is None else now
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise CannotRun(N_("the backup folder %(folder)s is not a folder"), folder=folder)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    final = folder / f"{PREFIX}{stamp}{SUFFIX_AGE if recipients else SUFFIX_PLAIN}"
    n = 1
    while final.exists():
        n += 1
        final = final.with_name(f"{PREFIX}{stamp}-{n}{SUFFIX_AGE if recipients else SUFFIX_PLAIN}")
    _remove_stale_work(Path(home.root))
    signing_key = origin.load_key(home, create=True)  # the home's own: never written into a backup
    # The snapshot and the plain archive are made in the home (beside the store they copy), never
    # on the backup disk: a backup killed there leaves nothing readable on an encrypted stick.
    with tempfile.TemporaryDirectory(prefix=WORK_PREFIX, dir=home.root) as work:
        work = Path(work)
        if postgres:
            snap = work / pg.DUMP
            described = _dump_postgres(store_target, snap)
        else:
            snap = work / STORE
            snapshot_sqlite(store_target, snap)
            described = describe_store(snap)  # opening it may set WAL: settle it back before hashing
            _settle(snap)
        _hold("snapshot")
        members = {snap.name: snap}
        config = Path(home.config)
        if config.is_file():
            members[CONFIG] = config
        for key in _key_files(home):
            members[f"{KEYS}/{key.name}"] = key
        # Hash what goes in (key files and config are small: read once more when added).
        contents = {name: (path.read_bytes() if path is not snap else None) for name, path in members.items()}
        hashes = {name: (sha256_file(path) if data is None else hashlib.sha256(data).hexdigest())
                  for (name, path), data in zip(members.items(), contents.values())}
        sizes = {name: (snap.stat().st_size if data is None else len(data)) for name, data in contents.items()}
        manifest = {"format": FORMAT, "software_version": _software_version(), "made_at": now,
                    "store_kind": "postgresql" if postgres else "sqlite", **described, "members": hashes,
                    "sizes": sizes}
        manifest = origin.sign(manifest, signing_key)  # last: the signature covers every field above
        try:  # only now: a store that cannot be read leaves no empty folder on the backup disk
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CannotRun(N_("cannot make the backup folder %(folder)s: %(reason)s"),
                            folder=folder, reason=exc.strerror) from None
        tmp = folder / f".{final.name}{TMP_SUFFIX}"
        plain = work / "backup.tar.gz" if recipients else tmp
        fd = os.open(plain, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as raw:
                with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tar:
                    _add_bytes(tar, MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode(), now)
                    for name, path in members.items():
                        data = contents[name]
                        if data is None:
                            _add_file(tar, name, path, now)
                        else:
                            _add_bytes(tar, name, data, now)
                raw.flush()
                os.fsync(raw.fileno())
            _hold("written")
            if check:
                (work / "check").mkdir()
                own = origin.Trust(keys=frozenset({origin.fingerprint_of(origin.public_hex(signing_key))}))
                checked, _found = verify_into(plain, work / "check", server=store_target if postgres else None,
                                              trust=own)
                manifest = {**manifest, "verified": checked["verified"]}  # what the check covered, for the log
            if recipients:
                import pyrage

                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                os.close(fd)
                pyrage.encrypt_file(str(plain), str(tmp), _recipients(recipients))
                os.chmod(tmp, 0o600)
                with open(tmp, "rb+") as fh:
                    os.fsync(fh.fileno())
                _hold("encrypted")
            os.rename(tmp, final)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    sync_folder(folder)
    _hold("renamed")
    return Made(final, final.stat().st_size, bool(recipients), manifest)
