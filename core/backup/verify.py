"""Checking a backup whole and sound (``verify``): decrypted when it is age-encrypted, every
member against the manifest's SHA-256, the store's own checks, and the audit chain against
the checkpoint recorded when it was made (for PostgreSQL, in a scratch database restored from
the dump). A damaged backup is a ``BackupError``; a check that cannot be made, ``CannotRun``.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
import threading
import zlib
from contextlib import contextmanager
from pathlib import Path

from core.i18n import N_
from core.rules.text import told, worded
from core.urls import mask_in

from . import origin, pg
from .archive import (
    AGE_MAGIC, CONFIG, FORMAT, KEYS, MANIFEST, SMALL_MAX, STORE, BackupError, CannotRun, known_member, store_kind,
)
from .members import TarStream, shown

def _identities(path: str | None) -> list:
    from pyrage import x25519

    if path is None:
        raise CannotRun(N_("the backup is encrypted: give the age identity file with --identity PATH"))
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CannotRun(N_("cannot read the identity file %(path)s: %(reason)s"), path=path, reason=exc.strerror) from None
    except UnicodeDecodeError:
        raise CannotRun(N_("the identity file %(path)s is not an age identity (not text)"), path=path) from None
    keys = [line.strip() for line in text.splitlines() if line.strip().startswith("AGE-SECRET-KEY-")]
    if not keys:
        raise CannotRun(N_("the identity file %(path)s holds no age identity (a line AGE-SECRET-KEY-...)"),
                        path=path)
    try:
        return [x25519.Identity.from_str(k) for k in keys]
    except Exception:  # noqa: BLE001 - pyrage's IdentityError
        raise CannotRun(N_("the identity file %(path)s holds an age identity that does not read"), path=path) from None


AGE_HEADER_MAX = 64 << 10  # an age header: its recipients' stanzas and its MAC (a few hundred bytes each)
RESERVE = 64 << 20  # free space left on the disk a backup is unpacked on


def _age_header_bounded(file: Path) -> None:
    """age reads its header whole before anything else (and slowly, line by line): refuse one
    longer than any real backup's before it is handed over."""
    try:
        with open(file, "rb") as fh:
            head = fh.read(AGE_HEADER_MAX + 1)
    except OSError as exc:
        raise CannotRun(N_("cannot read %(file)s: %(reason)s"), file=file, reason=exc.strerror) from None
    if b"\n--- " not in head[:AGE_HEADER_MAX] and len(head) > AGE_HEADER_MAX:
        raise BackupError(N_("the encrypted backup's header is over %(most)s bytes: not a backup this program "
                             "made; it was not read"), most=f"{AGE_HEADER_MAX:,}")


def _decrypt_failure(exc: BaseException) -> Exception:
    import pyrage

    if not isinstance(exc, (pyrage.DecryptError, OSError)):  # a chunk that fails its tag comes as an OSError
        return BackupError(N_("the encrypted backup does not decrypt (%(error)s: %(reason)s)"),
                           error=exc.__class__.__name__, reason=exc)
    words = str(exc)
    if "No matching keys" in words:
        return CannotRun(N_("the identity given does not open this backup (it was encrypted to other keys)"))
    return BackupError(N_("the encrypted backup is damaged or cut short (%(words)s)"), words=words)


@contextmanager
def _decrypting(file: Path, identities: list):
    """The plaintext of an age file as a stream: decrypted in a thread into a pipe, never into a
    file or memory. Each 64 KiB chunk is authenticated before it comes out. A failure to decrypt
    is raised here, in place of whatever the reader made of the cut-off stream."""
    import pyrage

    read_fd, write_fd = os.pipe()
    reader, writer = os.fdopen(read_fd, "rb"), os.fdopen(write_fd, "wb")
    failure: list[BaseException] = []

    def run() -> None:
        try:
            with open(file, "rb") as src:
                pyrage.decrypt_io(src, writer, identities)
        except BaseException as exc:  # noqa: BLE001 - handed to the reading thread
            failure.append(exc)
        finally:
            try:
                writer.close()
            except OSError:
                pass  # the reader stopped first: nothing more to say

    thread = threading.Thread(target=run, name="backup-decrypt", daemon=True)
    thread.start()

    def stop() -> None:  # a writer still at work gets a broken pipe and ends
        reader.close()
        thread.join()

    try:
        yield reader
    except (BackupError, CannotRun):
        stop()
        # The reader found the stream cut off because decryption failed: that is the reason to give.
        # A broken pipe is only the writer told that the reader had stopped for reasons of its own.
        if failure and not isinstance(failure[0], BrokenPipeError):
            raise _decrypt_failure(failure[0]) from None
        raise
    except BaseException:
        stop()
        raise
    stop()
    if failure:
        raise _decrypt_failure(failure[0]) from None


@contextmanager
def open_plain(file: Path, identity: str | None):
    """The backup's tar stream, read as it is gunzipped (and decrypted, when it is age-encrypted):
    nothing of it is held whole, in memory or on disk."""
    file = Path(file)
    if not file.is_file():
        raise CannotRun(N_("no backup file at %(file)s"), file=file)
    try:
        with open(file, "rb") as fh:
            head = fh.read(len(AGE_MAGIC))
    except OSError as exc:
        raise CannotRun(N_("cannot read %(file)s: %(reason)s"), file=file, reason=exc.strerror) from None
    if head != AGE_MAGIC:
        try:
            raw = open(file, "rb")
        except OSError as exc:
            raise CannotRun(N_("cannot read %(file)s: %(reason)s"), file=file, reason=exc.strerror) from None
        with raw, _gunzipped(raw) as stream:
            yield stream
        return
    identities = _identities(identity)
    _age_header_bounded(file)
    with _decrypting(file, identities) as raw, _gunzipped(raw) as stream:
        yield stream


@contextmanager
def _gunzipped(raw):
    """A gzip stream's content; a damaged or cut-off stream is a BackupError, wherever it is read."""
    try:
        with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
            yield gz
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise BackupError(N_("the backup is cut short or damaged (the archive does not read: %(reason)s)"),
                          reason=exc) from None


def _room(work: Path, need: int) -> None:
    """The disk the backup is unpacked on keeps ``RESERVE`` free after ``need`` more bytes."""
    free = shutil.disk_usage(work).free
    if need + RESERVE > free:
        raise CannotRun(N_("not enough free space in %(folder)s to unpack the backup: it needs %(need)s bytes "
                           "and %(free)s are free (a backup is unpacked there to be checked)"),
                        folder=work.parent, need=f"{need:,}", free=f"{free:,}")


def _read_manifest(tar: TarStream) -> dict:
    """The first member, the manifest: small, valid JSON, this format, listing the store."""
    first = tar.next()
    if first is None:
        raise BackupError(N_("the backup has no manifest this program reads"))
    if first.name != MANIFEST:
        raise BackupError(N_("the backup does not start with its manifest (its first member is %(member)s)"),
                          member=shown(first.name))
    if first.kind != "file" or first.size > SMALL_MAX:
        raise BackupError(N_("the backup's manifest is not a plain file of at most %(most)s bytes"),
                          most=f"{SMALL_MAX:,}")
    try:
        manifest = json.loads(b"".join(tar.chunks()))
    except (ValueError, RecursionError):
        raise BackupError(N_("the backup's manifest is not valid JSON")) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(N_("the backup has no manifest this program reads"))
    listed = manifest.get("members")
    store = pg.DUMP if store_kind(manifest) == "postgresql" else STORE
    if not isinstance(listed, dict) or store not in listed:
        raise BackupError(N_("the manifest does not list the store"))
    if not all(isinstance(v, str) for v in listed.values()):
        raise BackupError(N_("the manifest's list of members does not read"))
    sizes = manifest.get("sizes")
    if sizes is not None:  # backups made before sizes were listed have none
        if not isinstance(sizes, dict) or set(sizes) != set(listed) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in sizes.values()):
            raise BackupError(N_("the manifest's sizes do not read (one whole number of bytes for each member)"))
    return manifest


def _member_problem(header, manifest: dict, found: dict) -> BackupError | None:
    """Why a member is refused before a byte of it is read: its name first, then its size."""
    listed, sizes = manifest["members"], manifest.get("sizes")
    store = pg.DUMP if store_kind(manifest) == "postgresql" else STORE
    name = header.name
    if name in found or name == MANIFEST:
        return BackupError(N_("the backup holds the member %(member)s twice"), member=shown(name))
    if not known_member(name, store):
        return BackupError(N_("the backup holds an unexpected member %(member)s (a backup holds only "
                              "%(manifest)s, the store %(store)s, %(config)s and plain files under %(keys)s/)"),
                           member=shown(name), manifest=MANIFEST, store=store, config=CONFIG, keys=KEYS)
    if header.kind != "file":
        return BackupError(N_("the member %(member)s is a %(kind)s, not a plain file"),
                           member=shown(name), kind=header.kind)
    if name not in listed:
        return BackupError(N_("the member %(member)s is not listed in the manifest"), member=shown(name))
    if sizes is not None and header.size != sizes[name]:
        return BackupError(N_("the member %(name)s is %(size)s bytes, the manifest lists %(listed)s"),
                           name=name, size=f"{header.size:,}", listed=f"{sizes[name]:,}")
    if name != store and header.size > SMALL_MAX:
        return BackupError(N_("the member %(name)s is %(size)s bytes; only the store may be over %(most)s"),
                           name=name, size=f"{header.size:,}", most=f"{SMALL_MAX:,}")
    return None


def _unpack_member(tar: TarStream, dest: Path, name: str) -> str:
    """Write the current member to ``dest`` (a new file), returning its SHA-256."""
    digest = hashlib.sha256()
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            for chunk in tar.chunks():
                digest.update(chunk)
                out.write(chunk)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise CannotRun(N_("the disk filled up while unpacking the member %(name)s in %(folder)s"),
                            name=name, folder=dest.parent) from None
        raise BackupError(N_("the member %(name)s cannot be unpacked (%(reason)s)"),
                          name=name, reason=exc.strerror or exc) from None
    return digest.hexdigest()


def _read_members(stream, work: Path, judge=None) -> tuple[dict, dict]:
    """(manifest, name -> extracted path), checked while streaming: the manifest comes first, each
    member's name and size are judged against it before its data is read, nothing is written past
    its listed size, and each one's SHA-256 is checked as it is written. Nothing is unpacked unless
    the disk has room for every member the manifest lists. ``judge`` sees the manifest before
    anything is unpacked (its signature), and may refuse it by raising."""
    tar = TarStream(stream)
    manifest = _read_manifest(tar)
    if judge is not None:
        judge(manifest)
    sizes = manifest.get("sizes")
    (work / "members").mkdir(exist_ok=True)
    if sizes is not None:
        _room(work, sum(sizes.values()))
    found: dict[str, Path] = {}
    while (header := tar.next()) is not None:
        problem = _member_problem(header, manifest, found)
        if problem is not None:
            raise problem
        if sizes is None:
            _room(work, header.size)
        dest = work / "members" / header.name
        if _unpack_member(tar, dest, header.name) != manifest["members"][header.name]:
            raise BackupError(N_("the member %(member)s does not match its SHA-256 in the manifest"),
                              member=header.name)
        found[header.name] = dest
    # tar stops at its end marker: the rest of the stream (and gzip's CRC) is read too, so a
    # flipped byte in the padding or the trailer is found as well.
    tar.finish()
    for name in sorted(set(manifest["members"]) - set(found)):
        raise BackupError(N_("the member %(name)s listed in the manifest is missing"), name=name)
    return manifest, found


def _check_store(store_target: Path, manifest: dict, trust=None) -> str | None:
    from core.receiver import Receiver

    try:
        con = sqlite3.connect(f"file:{store_target}?mode=ro", uri=True)
        try:
            rows = con.execute("PRAGMA integrity_check").fetchall()
            if rows != [("ok",)]:
                raise BackupError(N_("the store fails SQLite's integrity check: %(reason)s"),
                                  reason=str(rows[0][0])[:200])
            bad = con.execute("PRAGMA foreign_key_check").fetchall()
            if bad:
                raise BackupError(N_("the store fails SQLite's foreign key check: %(rows)s row(s), first in "
                                     "table %(table)s"), rows=len(bad), table=bad[0][0])
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise BackupError(N_("the store in the backup is not a sound SQLite database (%(reason)s)"), reason=exc) from None
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
        raise BackupError(N_("the audit log did not verify when the backup was made: %(problem)s"),
                          problem=manifest.get('audit_problem') or 'no checkpoint recorded')
    try:
        cp = checkpoint_.parse(want)
    except checkpoint_.CheckpointError as exc:
        raise BackupError(N_("the manifest's audit checkpoint does not read: %(reason)s"), reason=exc) from None
    result = audit.verify(receiver, checkpoint=cp)
    if not result.ok:
        raise BackupError(N_("the audit log in the backup does not verify against the manifest's checkpoint: "
                             "%(why)s"), why=result.why)
    entries = manifest.get("counts", {}).get("audit_entries")
    if audit.head(receiver).count != entries:
        raise BackupError(N_("the audit log holds %(entries)s entries, the manifest recorded %(recorded)s"),
                          entries=audit.head(receiver).count, recorded=entries)
    cases = receiver.totals().cases
    if cases != manifest.get("counts", {}).get("cases"):
        raise BackupError(N_("the store holds %(cases)s cases, the manifest recorded %(recorded)s"),
                          cases=cases, recorded=manifest.get('counts', {}).get('cases'))
    return origin.check_chain(receiver, manifest, trust)


def verify_into(file: Path, work: Path, identity: str | None = None, server: str | None = None,
                audit_pg: bool = True, trust: origin.Trust | None = None) -> tuple[dict, dict]:
    """Check a backup whole and sound and made by the home ``trust`` names, leaving its members in
    ``work``; return (manifest, members).

    For a PostgreSQL backup the audit chain is checked by restoring the dump into a scratch
    database on ``server``'s server (when given and when a database can be made there); what was
    and was not checked is in the returned manifest's ``verified``."""
    notes: list = []
    with open_plain(Path(file), identity) as stream:
        # The signature is judged as soon as the manifest is read, before any member is unpacked.
        manifest, found = _read_members(
            stream, work, lambda m: notes.append(origin.check_signature(m, trust or origin.Trust())))
    unsigned = notes[0] if notes else None
    postgres = store_kind(manifest) == "postgresql"
    # What was checked and what was not: English in the manifest and --json, said in the
    # operator's language where `backup verify` and `restore` print them (``in_language``).
    checked, not_checked = [worded(N_("every member's SHA-256"))], [unsigned] if unsigned else []
    if not unsigned:
        checked.append(worded(N_("the manifest's signature by this home's backup key")))
    if postgres:
        try:
            entries = pg.listing(found[pg.DUMP])
        except pg.PgError as exc:
            if exc.cannot:
                raise CannotRun(exc.message, **exc.values) from None
            raise BackupError(exc.message, **exc.values) from None
        checked.append(worded(N_("the PostgreSQL dump reads (pg_restore --list: %(entries)s entries)"),
                              entries=entries))
        if not audit_pg:
            pass
        elif server is None:
            not_checked.append(worded(N_("the audit chain: no PostgreSQL server to restore the dump into "
                                         "(give --db postgresql://... of a server where a scratch database may be "
                                         "made)")))
        else:
            try:
                with pg.Scratch(server, manifest.get("pg_schema")) as url:
                    note = check_restored(url, found[pg.DUMP], manifest, trust)
                not_checked.extend([note] if note else [])
                checked.append(worded(N_("the audit chain and counts, restored into a scratch database")))
            except pg.PgError as exc:
                not_checked.append(worded(N_("the audit chain: %(problem)s"),
                                          problem=told(exc)))
    else:
        note = _check_store(found[STORE], manifest, trust)
        not_checked.extend([note] if note else [])
        checked.append(worded(N_("SQLite's integrity and foreign key checks, the audit chain against the checkpoint")))
    manifest["verified"] = {"checked": checked, "not_checked": not_checked}
    return manifest, found


def check_restored(url: str, dump_file: Path, manifest: dict, trust=None) -> str | None:
    """``pg_restore`` the dump into ``url``'s (empty) database, then check its audit chain there."""
    from core.receiver import Receiver
    from core.rules.text import one_line

    try:
        pg.restore_into(url, dump_file)
    except pg.PgError as exc:
        raise BackupError(N_("the PostgreSQL dump does not restore: %(reason)s"), reason=exc) from None
    try:
        receiver = Receiver(url, create=False)
    except Exception as exc:  # noqa: BLE001 - StoreError, psycopg's errors: one masked line
        raise BackupError(N_("the restored store does not open: %(reason)s"), reason=mask_in(one_line(exc), url)) from None
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
