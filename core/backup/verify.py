"""Checking a backup whole and sound (``verify``): decrypted when it is age-encrypted, every
member against the manifest's SHA-256, the store's own checks, and the audit chain against
the checkpoint recorded when it was made (for PostgreSQL, in a scratch database restored from
the dump). A damaged backup is a ``BackupError``; a check that cannot be made, ``CannotRun``.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import tarfile
import tempfile
import zlib
from pathlib import Path

from core.urls import mask_in

from . import origin, pg
from .archive import AGE_MAGIC, FORMAT, KEYS, MANIFEST, STORE, BackupError, CannotRun, sha256_file, store_kind

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


def _check_store(store_target: Path, manifest: dict, trust=None) -> str | None:
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
        return _check_audit(receiver, manifest, trust)
    finally:
        receiver.close()


def _check_audit(receiver, manifest: dict, trust=None) -> str | None:
    """The audit log verifies against the manifest's checkpoint, with the counts it recorded, and
    against a checkpoint given by hand (``origin.check_chain``); returns a note of what was not checked."""
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
    return origin.check_chain(receiver, manifest, trust)


def verify_into(file: Path, work: Path, identity: str | None = None, server: str | None = None,
                audit_pg: bool = True, trust: origin.Trust | None = None) -> tuple[dict, dict]:
    """Check a backup whole and sound and made by the home ``trust`` names, leaving its members in
    ``work``; return (manifest, members).

    For a PostgreSQL backup the audit chain is checked by restoring the dump into a scratch
    database on ``server``'s server (when given and when a database can be made there); what was
    and was not checked is in the returned manifest's ``verified``."""
    plain = open_plain(Path(file), work, identity)
    manifest, found = _read_members(plain, work)
    unsigned = origin.check_signature(manifest, trust or origin.Trust())
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
        if sha256_file(path) != listed[name]:
            raise BackupError(f"the member {name} does not match its SHA-256 in the manifest")
    checked, not_checked = ["every member's SHA-256"], [unsigned] if unsigned else []
    if not unsigned:
        checked.append("the manifest's signature by this home's backup key")
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
                    note = check_restored(url, found[pg.DUMP], manifest, trust)
                not_checked.extend([note] if note else [])
                checked.append("the audit chain and counts, restored into a scratch database")
            except pg.PgError as exc:
                not_checked.append(f"the audit chain: {exc}")
    else:
        note = _check_store(found[STORE], manifest, trust)
        not_checked.extend([note] if note else [])
        checked.append("SQLite's integrity and foreign key checks, the audit chain against the checkpoint")
    manifest["verified"] = {"checked": checked, "not_checked": not_checked}
    return manifest, found


def check_restored(url: str, dump_file: Path, manifest: dict, trust=None) -> str | None:
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
        return _check_audit(receiver, manifest, trust)
    finally:
        receiver.close()


def verify(file: Path, identity: str | None = None, server: str | None = None,
           trust: origin.Trust | None = None) -> dict:
    """The manifest of a backup that is whole and sound; BackupError or CannotRun otherwise.
    It is unpacked in the system's temporary folder (never beside a backup on a stick), then removed."""
    with tempfile.TemporaryDirectory(prefix=".ussd-verify-") as work:
        manifest, _found = verify_into(Path(file), Path(work), identity, server, trust=trust)
        return manifest
