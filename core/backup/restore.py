"""Laying a verified backup out as a home (``restore``): into a new folder only, its store
beside the config or, for PostgreSQL, ``pg_restore``d into a new, empty database; nothing of
the home changes unless every piece is in place. A restored home starts with its alert targets
paused (``core.alerts.pause``): nothing the backup carries runs before an admin has looked.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from core.alerts.pause import write_marker
from core.home import sync_folder
from core.i18n import N_
from core.rules.text import worded

from . import pg
from .archive import CONFIG, KEYS, CannotRun, store_kind
from .verify import check_restored, verify_into

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


def _lay_out(name: str, path: Path, dest: Path, url: str | None) -> None:
    """One verified member in its place in the new home (config.toml with its ``db =`` line set aside).
    The names were checked while unpacking, so a failure here is the disk's, said in words."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if name == CONFIG:  # at most archive.SMALL_MAX bytes: checked while unpacking
            dest.write_text(_without_db_line(path.read_bytes().decode("utf-8", "replace"), url), encoding="utf-8")
        else:
            os.replace(path, dest)
        os.chmod(dest, 0o600)
        with open(dest, "rb+") as fh:
            os.fsync(fh.fileno())
    except OSError as exc:
        raise CannotRun(N_("cannot lay out the member %(name)s in %(folder)s: %(reason)s"),
                        name=name, folder=dest.parent, reason=exc.strerror or exc) from None


def _check_target(url: str, manifest: dict) -> None:
    """The database named by ``--db`` is reachable, empty, and its search path finds the store's schema."""
    try:
        con = pg.connect(url)
    except pg.PgError as exc:
        raise CannotRun(exc.message, **exc.values) from None
    try:
        tables, store = pg.user_tables(con)
        schema = pg.current_schema(con)
    finally:
        con.close()
    if store:
        raise CannotRun(N_("the database named by --db already holds a store; restore into a new, empty "
                           "database"))
    if tables:
        raise CannotRun(N_("the database named by --db is not empty (%(tables)s tables or other relations); "
                           "restore into a new, empty database"), tables=tables)
    want = manifest.get("pg_schema") or "public"
    if schema != want:
        raise CannotRun(N_("the backup's store is in the schema %(want)s, but the --db URL's search path starts"
                           " at %(schema)s: add options=-csearch_path=%(name)s to the URL"),
                        want=repr(want), schema=repr(schema), name=want)


def restore(file: Path, home, identity: str | None = None, db: str | None = None, trust=None) -> dict:
    """Verify (made by the home ``trust`` names), then lay out store (or ``pg_restore`` it into the
    empty database ``db``), keys and config in ``home``; refuse a home that holds a store, and a
    database that holds anything."""
    from core.store.backend import is_postgres_url

    root = Path(home.root)
    if db is not None and not is_postgres_url(db):
        raise CannotRun(N_("restore --db names an empty PostgreSQL database (postgresql://...); a SQLite store "
                           "is restored into the home"))
    if root.exists() and not root.is_dir():
        raise CannotRun(N_("the home %(root)s is not a folder"), root=root)
    if Path(home.db).exists():
        raise CannotRun(N_("the home %(root)s already holds a store (%(store)s); restore into a new folder"),
                        root=root, store=Path(home.db).name)
    if root.is_dir() and (Path(home.operators).exists() or Path(home.config).exists()):
        raise CannotRun(N_("the home %(root)s already holds operators' keys or a config.toml; restore into a "
                           "new folder"), root=root)
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".ussd-restore-", dir=root.parent) as work:
        work = Path(work)
        # The audit chain of a PostgreSQL dump is checked once it is restored, in the target itself.
        manifest, found = verify_into(Path(file), work, identity, audit_pg=False, trust=trust)
        postgres = store_kind(manifest) == "postgresql"
        if postgres and db is None:
            raise CannotRun(N_("this backup holds a PostgreSQL store: name a new, empty database with --db "
                               "postgresql://..."))
        if not postgres and db is not None:
            raise CannotRun(N_("this backup holds a SQLite store: restore it without --db (into the home)"))
        if postgres:
            _check_target(db, manifest)
        layout = work / "home"
        layout.mkdir(mode=0o700)
        if CONFIG not in found and postgres:
            found[CONFIG] = work / "empty-config.toml"
            found[CONFIG].write_text("")
        for name, path in found.items():
            if name != pg.DUMP:
                _lay_out(name, path, layout / name, db if postgres else None)
        if (layout / KEYS).is_dir():
            sync_folder(layout / KEYS)
        write_marker(layout, Path(file).name, manifest.get("made_at"))
        sync_folder(layout)
        if root.is_dir() and Path(home.db).exists():
            raise CannotRun(N_("the home %(root)s gained a store while restoring; nothing changed"), root=root)
        if postgres:
            # One transaction: a restore that fails leaves the database as empty as it was.
            note = check_restored(db, found[pg.DUMP], manifest, trust)
            manifest["verified"]["not_checked"].extend([note] if note else [])
            manifest["verified"]["checked"].append(worded(N_("the audit chain and counts, in the restored database")))
        if root.is_dir():  # an empty (or store-less) folder: move each piece in
            for entry in sorted(layout.iterdir()):
                os.rename(entry, root / entry.name)
            sync_folder(root)
        else:
            os.rename(layout, root)
            sync_folder(root.parent)
    return manifest
