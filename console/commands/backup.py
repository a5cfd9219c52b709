"""``backup``, ``backup verify`` and ``restore``: a backup is only a backup once it restores.

``backup verify`` exits 0 for a whole, sound backup, 1 for a damaged one (each
problem in plain words), 2 when it cannot check at all (no file, no identity).
``restore`` verifies first and never lays a backup over a home that holds a store.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from core.backup import archive
from core.backup.make import make_backup
from core.backup.restore import restore
from core.backup.verify import verify
from core.backup.config import load_backup_config
from core.home import Home

from ..render import make_console, print_json, safe
from .common import with_examples

EXIT_BAD = 1
EXIT_CANNOT = 2


def register(sub, common) -> None:
    p = sub.add_parser("backup", parents=[common],
                       help="one file with the store, operators' keys and config (encrypted to [backup] recipients)",
                       **with_examples("ussd-console backup", "ussd-console backup --to /media/usb",
                                       "ussd-console backup verify /media/usb/ussd-backup-20250508T140000Z.tar.gz.age --identity key.txt"))
    p.add_argument("--to", metavar="DIR", help="the folder to write it in (default [backup] dir or <home>/backups)")
    p.set_defaults(handler=cmd_backup)
    act = p.add_subparsers(dest="backup_command", metavar="ACTION")
    q = act.add_parser("verify", parents=[common], help="check a backup whole and sound (exit 0), damaged (1)",
                       **with_examples("ussd-console backup verify backups/ussd-backup-20250508T140000Z.tar.gz",
                                       "ussd-console backup verify /media/usb/ussd-backup-20250508T140000Z.tar.gz.age --identity key.txt"))
    q.add_argument("file", metavar="FILE")
    q.add_argument("--identity", metavar="PATH", help="the age identity file, for an encrypted backup")
    q.set_defaults(handler=cmd_backup_verify)
    q = sub.add_parser("restore", parents=[common],
                       help="verify a backup, then lay it out as a new home (a PostgreSQL one into the empty "
                            "database --db names)",
                       **with_examples("ussd-console --home /srv/ussd-new restore ussd-backup-20250508T140000Z.tar.gz",
                                       "ussd-console --home /srv/ussd-new restore ussd-backup-20250508T140000Z.tar.gz.age --identity key.txt",
                                       "ussd-console --home /srv/ussd-new restore backup.tar.gz --db postgresql://ussd@db/ussd_new"))
    q.add_argument("file", metavar="FILE")
    q.add_argument("--identity", metavar="PATH", help="the age identity file, for an encrypted backup")
    q.set_defaults(handler=cmd_restore)


def _fail(words: str, code: int) -> int:
    make_console(stderr=True).print(Text("backup: ", style="bold red") + safe(words, 600), soft_wrap=True)
    return code


def cmd_backup(args, ctx) -> int:
    home = ctx.open_home()
    config = load_backup_config(home.config)
    folder = Path(args.to).expanduser() if args.to else config.folder(home)
    try:
        made = make_backup(home, ctx.store_target, folder, config.recipients)
    except archive.CannotRun as exc:
        return _fail(str(exc), EXIT_CANNOT)
    if ctx.json:
        print_json({"file": str(made.file), "size": made.size, "encrypted": made.encrypted,
                    "made_at": made.manifest["made_at"], "counts": made.manifest["counts"],
                    "checkpoint": made.manifest["checkpoint"]})
    else:
        out = make_console()
        if not made.encrypted:
            make_console(stderr=True).print(
                Text("note: no [backup] recipients in config.toml: this backup is NOT encrypted; keep it safe"),
                soft_wrap=True)
        c = made.manifest["counts"]
        out.print(Text.assemble("backup written: ", safe(str(made.file), 1000),
                                f" ({made.size:,} bytes; {c['cases']} cases, {c['audit_entries']} audit entries"
                                f"{', encrypted' if made.encrypted else ''})"), soft_wrap=True)
    if made.manifest.get("checkpoint") is None:
        make_console(stderr=True).print(Text("warning: the audit log does not verify: ") +
                                        safe(made.manifest.get("audit_problem") or "", 400), soft_wrap=True)
    return 0


def _pg_server(args, ctx) -> str | None:
    """Where a PostgreSQL backup's dump may be restored for a check: ``--db``, else the home's store."""
    from core.config import store_target
    from core.store.backend import is_postgres_url

    try:
        target = getattr(args, "db", None) or store_target(ctx.home)
    except ValueError:
        return None
    return target if is_postgres_url(target) else None


def _note_verified(home, file: Path, made_at: object) -> None:
    """A backup in this home's backup folder that verified counts as verified, for ``status`` and
    the console's list alike, as made at ``made_at``."""
    from core.backup import schedule

    try:
        if Path(home.root).is_dir() and file.resolve().parent == load_backup_config(home.config).folder(home).resolve():
            at = made_at if isinstance(made_at, (int, float)) and not isinstance(made_at, bool) else None
            schedule.note_verified(home, file, at)
    except (OSError, ValueError):
        pass  # the mark is a convenience; the verdict above stands


def cmd_backup_verify(args, ctx) -> int:
    try:
        manifest = verify(Path(args.file), args.identity, server=_pg_server(args, ctx))
    except archive.CannotRun as exc:
        return _fail(str(exc), EXIT_CANNOT)
    except archive.BackupError as exc:
        if ctx.json:
            print_json({"file": args.file, "ok": False, "why": str(exc)})
        return _fail(f"BAD: {exc}", EXIT_BAD)
    _note_verified(ctx.home, Path(args.file), manifest["made_at"])
    if ctx.json:
        print_json({"file": args.file, "ok": True, "made_at": manifest["made_at"], "counts": manifest["counts"],
                    "checkpoint": manifest["checkpoint"], "software_version": manifest["software_version"],
                    "schema_version": manifest["schema_version"], "store_kind": archive.store_kind(manifest),
                    **manifest["verified"]})
    else:
        c = manifest["counts"]
        make_console().print(Text.assemble("backup OK: ", safe(args.file, 1000),
                                           f" ({c['cases']} cases, {c['frames_kept']} frames kept, "
                                           f"{c['conflicts_open']} conflicts open, {c['audit_entries']} audit entries)"),
                             soft_wrap=True)
        make_console().print(Text("checked: " + "; ".join(manifest["verified"]["checked"])), soft_wrap=True)
    for words in manifest["verified"]["not_checked"]:
        make_console(stderr=True).print(Text("note: not checked: ") + safe(words, 600), soft_wrap=True)
    return 0


def cmd_restore(args, ctx) -> int:
    if not getattr(args, "home", None):
        return _fail("say where to restore with --home NEW (a new folder)", EXIT_CANNOT)
    home = Home.resolve(args.home)
    try:
        manifest = restore(Path(args.file), home, args.identity, db=getattr(args, "db", None))
    except archive.CannotRun as exc:
        return _fail(str(exc), EXIT_CANNOT)
    except archive.BackupError as exc:
        return _fail(f"not restored, the backup is damaged: {exc}", EXIT_BAD)
    if ctx.json:
        print_json({"home": str(home.root), "restored": args.file, "counts": manifest["counts"],
                    "checkpoint": manifest["checkpoint"], "store_kind": archive.store_kind(manifest)})
    else:
        make_console().print(Text.assemble("restored into ", safe(str(home.root), 1000),
                                           f"; now: ussd-console --home {home.root} audit verify"), soft_wrap=True)
    return 0
