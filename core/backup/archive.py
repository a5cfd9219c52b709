"""One backup file: a tar of a consistent store snapshot, the operators' key files, config.toml
and a manifest; encrypted to age recipients when any are configured.

The snapshot comes from SQLite's online backup API (a file copy of a live store can mix old
and new pages). The file is written under a temporary name, fsynced, renamed and its folder
fsynced, so a backup killed at any moment leaves nothing under a final name.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import sqlite3
import tarfile
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from core.home import DB_NAME, sync_folder
from core.urls import mask_in

from . import pg

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


class BackupError(Exception):
    """The backup is damaged or does not prove what it should: exit 1 with these words."""


class CannotRun(Exception):
    """The check cannot be made at all (no file, no identity): exit 2 with these words."""


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


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


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
    from core import Receiver

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

    totals = receiver.totals()
    result, cp = audit.make_checkpoint(receiver)
    head = audit.head(SimpleNamespace(db=receiver.db))
    return {
        "schema_version": schema,
        "counts": {"cases": totals["cases"], "frames_kept": totals["seen_frames"],
                   "conflicts_open": totals["conflicts_open"], "audit_entries": head.count},
        "checkpoint": cp.line() if cp is not None else None,
        "audit_problem": None if cp is not None else result.why,
    }


def _dump_postgres(url: str, dest: Path) -> dict:
    """``pg_dump`` of a PostgreSQL store, and the manifest's figures of the same moment."""
    from core import Receiver
    from core.rules.text import one_line

    try:
        receiver = Receiver(url, create=False)
    except Exception as exc:  # noqa: BLE001 - StoreError, psycopg's errors: one masked line, exit 2
        raise CannotRun(f"cannot open the PostgreSQL store: {mask_in(one_line(exc), url)}") from None
    try:
        schema = receiver.db.execute_sql("SELECT max(version) FROM schema_version").fetchone()[0]
        return pg.dump(url, dest, lambda: describe_receiver(receiver, schema))
    except pg.PgError as exc:
        raise CannotRun(str(exc)) from None
    finally:
        receiver.close()


def _key_files(home) -> list[Path]:
    folder = Path(home.operators)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
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
        raise CannotRun(f"no store at {store_target}")
    now = time.time() if now is None else now
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise CannotRun(f"the backup folder {folder} is not a folder")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    final = folder / f"{PREFIX}{stamp}{SUFFIX_AGE if recipients else SUFFIX_PLAIN}"
    n = 1
    while final.exists():
        n += 1
        final = final.with_name(f"{PREFIX}{stamp}-{n}{SUFFIX_AGE if recipients else SUFFIX_PLAIN}")
    _remove_stale_work(Path(home.root))
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
        hashes = {name: (_sha256(path) if data is None else hashlib.sha256(data).hexdigest())
                  for (name, path), data in zip(members.items(), contents.values())}
        manifest = {"format": FORMAT, "software_version": _software_version(), "made_at": now,
                    "store_kind": "postgresql" if postgres else "sqlite", **described, "members": hashes}
        try:  # only now: a store that cannot be read leaves no empty folder on the backup disk
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CannotRun(f"cannot make the backup folder {folder}: {exc.strerror}") from None
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
                checked, _found = verify_into(plain, work / "check", server=store_target if postgres else None)
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


# -- reading a backup ------------------------------------------------------------------------

def _identities(path: str | None) -> list:
    from pyrage import x25519

    if path is None:
        raise CannotRun("the backup is encrypted: give the age identity file with --identity PATH")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CannotRun(f"cannot read the identity file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise CannotRun(f"the identity file {path} is not an age identity (not text)") from None
    keys = [line.strip() for line in text.splitlines() if line.strip().startswith("AGE-SECRET-KEY-")]
    if not keys:
        raise CannotRun(f"the identity file {path} holds no age identity (a line AGE-SECRET-KEY-...)")
    try:
        return [x25519.Identity.from_str(k) for k in keys]
    except Exception:  # noqa: BLE001 - pyrage's IdentityError
        raise CannotRun(f"the identity file {path} holds an age identity that does not read") from None


def open_plain(file: Path, work: Path, identity: str | None) -> Path:
    """The backup's tar.gz: the file itself, or decrypted into ``work``."""
    file = Path(file)
    if not file.is_file():
        raise CannotRun(f"no backup file at {file}")
    try:
        with open(file, "rb") as fh:
            head = fh.read(len(AGE_MAGIC))
    except OSError as exc:
        raise CannotRun(f"cannot read {file}: {exc.strerror}") from None
    if head != AGE_MAGIC:
        return file
    identities = _identities(identity)
    import pyrage

    out = work / "backup.tar.gz"
    try:
        pyrage.decrypt_file(str(file), str(out), identities)
    except pyrage.DecryptError as exc:
        words = str(exc)
        if "No matching keys" in words:
            raise CannotRun("the identity given does not open this backup (it was encrypted to other keys)") from None
        raise BackupError(f"the encrypted backup is damaged or cut short ({words})") from None
    return out


def _read_members(plain: Path, work: Path) -> tuple[dict, dict]:
    """(manifest, name -> extracted path); a damaged or cut-off archive is a BackupError."""
    found: dict[str, Path] = {}
    manifest = None
    try:
        with gzip.open(plain, "rb") as gz, tarfile.open(fileobj=gz, mode="r|") as tar:
            for info in tar:
                if not info.isfile():
                    raise BackupError(f"the backup holds {info.name[:80]!r}, which is not a plain file")
                name = info.name
                parts = name.split("/")
                if name.startswith("/") or ".." in parts or len(parts) > 2 or (len(parts) == 2 and parts[0] != KEYS):
                    raise BackupError(f"the backup holds an unexpected member {name[:80]!r}")
                data = tar.extractfile(info)
                if name == MANIFEST:
                    try:
                        manifest = json.loads(data.read(1 << 20))
                    except ValueError:
                        raise BackupError("the backup's manifest is not valid JSON") from None
                    continue
                dest = work / "members" / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                with open(dest, "wb") as out:
                    while chunk := data.read(1 << 20):
                        out.write(chunk)
                found[name] = dest
            # tar stops at its end marker: the rest of the gzip stream (and its CRC) is read too,
            # so a flipped byte in the padding or the trailer is found as well.
            while gz.read(1 << 20):
                pass
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise BackupError(f"the backup is cut short or damaged (the archive does not read: {exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError("the backup has no manifest this program reads")
    return manifest, found


def _check_store(store_target: Path, manifest: dict) -> None:
    from core import Receiver

    try:
        con = sqlite3.connect(f"file:{store_target}?mode=ro", uri=True)
        try:
            rows = con.execute("PRAGMA integrity_check").fetchall()
            if rows != [("ok",)]:
                raise BackupError(f"the store fails SQLite's integrity check: {str(rows[0][0])[:200]}")
            bad = con.execute("PRAGMA foreign_key_check").fetchall()
            if bad:
                raise BackupError(f"the store fails SQLite's foreign key check: {len(bad)} row(s), "
                                  f"first in table {bad[0][0]}")
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"the store in the backup is not a sound SQLite database ({exc})") from None
    receiver = Receiver(str(store_target))
    try:
        _check_audit(receiver, manifest)
    finally:
        receiver.close()


def _check_audit(receiver, manifest: dict) -> None:
    """The audit log verifies against the manifest's checkpoint, with the counts it recorded."""
    from core.signing import audit
    from core.signing import checkpoint as checkpoint_

    want = manifest.get("checkpoint")
    if want is None:
        raise BackupError(f"the audit log did not verify when the backup was made: "
                          f"{manifest.get('audit_problem') or 'no checkpoint recorded'}")
    try:
        cp = checkpoint_.parse(want)
    except checkpoint_.CheckpointError as exc:
        raise BackupError(f"the manifest's audit checkpoint does not read: {exc}") from None
    result = audit.verify(receiver, checkpoint=cp)
    if not result.ok:
        raise BackupError(f"the audit log in the backup does not verify against the manifest's checkpoint: "
                          f"{result.why}")
    entries = manifest.get("counts", {}).get("audit_entries")
    if audit.head(receiver).count != entries:
        raise BackupError(f"the audit log holds {audit.head(receiver).count} entries, the manifest "
                          f"recorded {entries}")
    cases = receiver.totals()["cases"]
    if cases != manifest.get("counts", {}).get("cases"):
        raise BackupError(f"the store holds {cases} cases, the manifest recorded "
                          f"{manifest.get('counts', {}).get('cases')}")


def store_kind(manifest: dict) -> str:
    """``sqlite`` or ``postgresql``: backups made before PostgreSQL stores were backed up say nothing."""
    return "postgresql" if manifest.get("store_kind") == "postgresql" else "sqlite"


def verify_into(file: Path, work: Path, identity: str | None = None, server: str | None = None,
                audit_pg: bool = True) -> tuple[dict, dict]:
    """Check a backup whole and sound, leaving its members in ``work``; return (manifest, members).

    For a PostgreSQL backup the audit chain is checked by restoring the dump into a scratch
    database on ``server``'s server (when given and when a database can be made there); what was
    and was not checked is in the returned manifest's ``verified``."""
    plain = open_plain(Path(file), work, identity)
    manifest, found = _read_members(plain, work)
    listed = manifest.get("members")
    postgres = store_kind(manifest) == "postgresql"
    store_member = pg.DUMP if postgres else STORE
    if not isinstance(listed, dict) or store_member not in listed:
        raise BackupError("the manifest does not list the store")
    for name in sorted(set(listed) - set(found)):
        raise BackupError(f"the member {name} listed in the manifest is missing")
    for name in sorted(set(found) - set(listed)):
        raise BackupError(f"the member {name} is not listed in the manifest")
    for name, path in sorted(found.items()):
        if _sha256(path) != listed[name]:
            raise BackupError(f"the member {name} does not match its SHA-256 in the manifest")
    checked, not_checked = ["every member's SHA-256"], []
    if postgres:
        try:
            entries = pg.listing(found[pg.DUMP])
        except pg.PgError as exc:
            if exc.cannot:
                raise CannotRun(str(exc)) from None
            raise BackupError(str(exc)) from None
        checked.append(f"the PostgreSQL dump reads (pg_restore --list: {entries} entries)")
        if not audit_pg:
            pass
        elif server is None:
            not_checked.append("the audit chain: no PostgreSQL server to restore the dump into "
                               "(give --db postgresql://... of a server where a scratch database may be made)")
        else:
            try:
                with pg.Scratch(server, manifest.get("pg_schema")) as url:
                    check_restored(url, found[pg.DUMP], manifest)
                checked.append("the audit chain and counts, restored into a scratch database")
            except pg.PgError as exc:
                not_checked.append(f"the audit chain: {exc}")
    else:
        _check_store(found[STORE], manifest)
        checked.append("SQLite's integrity and foreign key checks, the audit chain against the checkpoint")
    manifest["verified"] = {"checked": checked, "not_checked": not_checked}
    return manifest, found


def check_restored(url: str, dump_file: Path, manifest: dict) -> None:
    """``pg_restore`` the dump into ``url``'s (empty) database, then check its audit chain there."""
    from core import Receiver
    from core.rules.text import one_line

    try:
        pg.restore_into(url, dump_file)
    except pg.PgError as exc:
        raise BackupError(f"the PostgreSQL dump does not restore: {exc}") from None
    try:
        receiver = Receiver(url, create=False)
    except Exception as exc:  # noqa: BLE001 - StoreError, psycopg's errors: one masked line
        raise BackupError(f"the restored store does not open: {mask_in(one_line(exc), url)}") from None
    try:
        _check_audit(receiver, manifest)
    finally:
        receiver.close()


def verify(file: Path, identity: str | None = None, server: str | None = None) -> dict:
    """The manifest of a backup that is whole and sound; BackupError or CannotRun otherwise.
    It is unpacked in the system's temporary folder (never beside a backup on a stick), then removed."""
    with tempfile.TemporaryDirectory(prefix=".ussd-verify-") as work:
        manifest, _found = verify_into(Path(file), Path(work), identity, server)
        return manifest


def _without_db_line(text: str, url: str | None = None) -> str:
    """A restored home keeps its store beside the config (a top-level ``db =`` line is set aside),
    or, restored into PostgreSQL, in the database it was restored into (``db = url`` first)."""
    out, top = [], True
    if url is not None:
        out.append(f"db = {json.dumps(url)}  # restored from a backup into this database\n")
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("["):
            top = False
        if top and stripped.split("=", 1)[0].strip() == "db" and "=" in stripped:
            where = "the database above" if url is not None else "receiver.db in this home"
            out.append(f"# restored from a backup; the store is {where}. Was: " + line.lstrip())
            continue
        out.append(line)
    return "".join(out)


def _check_target(url: str, manifest: dict) -> None:
    """The database named by ``--db`` is reachable, empty, and its search path finds the store's schema."""
    try:
        con = pg.connect(url)
    except pg.PgError as exc:
        raise CannotRun(str(exc)) from None
    try:
        tables, store = pg.user_tables(con)
        schema = pg.current_schema(con)
    finally:
        con.close()
    if store:
        raise CannotRun("the database named by --db already holds a store; restore into a new, empty database")
    if tables:
        raise CannotRun(f"the database named by --db is not empty ({tables} tables or other relations); "
                        "restore into a new, empty database")
    want = manifest.get("pg_schema") or "public"
    if schema != want:
        raise CannotRun(f"the backup's store is in the schema {want!r}, but the --db URL's search path starts "
                        f"at {schema!r}: add options=-csearch_path={want} to the URL")


def restore(file: Path, home, identity: str | None = None, db: str | None = None) -> dict:
    """Verify, then lay out store (or ``pg_restore`` it into the empty database ``db``), keys and config
    in ``home``; refuse a home that holds a store, and a database that holds anything."""
    from core.store.backend import is_postgres_url

    root = Path(home.root)
    if db is not None and not is_postgres_url(db):
        raise CannotRun("restore --db names an empty PostgreSQL database (postgresql://...); "
                        "a SQLite store is restored into the home")
    if root.exists() and not root.is_dir():
        raise CannotRun(f"the home {root} is not a folder")
    if Path(home.db).exists():
        raise CannotRun(f"the home {root} already holds a store ({Path(home.db).name}); restore into a new folder")
    if root.is_dir() and (Path(home.operators).exists() or Path(home.config).exists()):
        raise CannotRun(f"the home {root} already holds operators' keys or a config.toml; restore into a new folder")
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".ussd-restore-", dir=root.parent) as work:
        work = Path(work)
        # The audit chain of a PostgreSQL dump is checked once it is restored, in the target itself.
        manifest, found = verify_into(Path(file), work, identity, audit_pg=False)
        postgres = store_kind(manifest) == "postgresql"
        if postgres and db is None:
            raise CannotRun("this backup holds a PostgreSQL store: name a new, empty database with "
                            "--db postgresql://...")
        if not postgres and db is not None:
            raise CannotRun("this backup holds a SQLite store: restore it without --db (into the home)")
        if postgres:
            _check_target(db, manifest)
        layout = work / "home"
        layout.mkdir(mode=0o700)
        if CONFIG not in found and postgres:
            found[CONFIG] = work / "empty-config.toml"
            found[CONFIG].write_text("")
        for name, path in found.items():
            if name == pg.DUMP:
                continue
            dest = layout / name
            dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            data = path.read_bytes() if name == CONFIG else None
            if data is not None:
                dest.write_text(_without_db_line(data.decode("utf-8", "replace"), db if postgres else None),
                                encoding="utf-8")
            else:
                os.replace(path, dest)
            os.chmod(dest, 0o600)
            with open(dest, "rb+") as fh:
                os.fsync(fh.fileno())
        if (layout / KEYS).is_dir():
            sync_folder(layout / KEYS)
        sync_folder(layout)
        if root.is_dir() and Path(home.db).exists():
            raise CannotRun(f"the home {root} gained a store while restoring; nothing changed")
        if postgres:
            # One transaction: a restore that fails leaves the database as empty as it was.
            check_restored(db, found[pg.DUMP], manifest)
            manifest["verified"]["checked"].append("the audit chain and counts, in the restored database")
        if root.is_dir():  # an empty (or store-less) folder: move each piece in
            for entry in sorted(layout.iterdir()):
                os.rename(entry, root / entry.name)
            sync_folder(root)
        else:
            os.rename(layout, root)
            sync_folder(root.parent)
    return manifest
