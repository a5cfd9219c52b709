"""``backup``, ``backup verify``, ``backup key`` and ``restore``: a backup is only a backup once it
restores, and only this home's once its manifest is signed by this home's backup key.

``backup verify`` exits 0 for a whole, sound backup this home made, 1 for a damaged one or one
this home did not make (each problem in plain words), 2 when it cannot check at all (no file,
no identity, no trust anchor). ``restore`` verifies first and never lays a backup over a home
that holds a store; on a machine with nothing else of the home, ``--checkpoint`` or
``--backup-key`` names the home's backup key.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from core.i18n import _, ngettext, number
from core.rules.text import in_language, said
from core.backup import archive, origin
from core.backup.make import make_backup
from core.backup.restore import restore
from core.backup.verify import verify
from core.backup.config import load_backup_config
from core.home import Home

from ..render import assembled, make_console, print_json, safe
from .signing import signing_parser
from .common import with_examples

EXIT_BAD = 1
EXIT_CANNOT = 2


def register(sub, common) -> None:
    p = sub.add_parser("backup", parents=[common],
                       help=_("one file with the store, operators' keys and config (encrypted to [backup] recipients)"),
                       **with_examples("ussd-console backup", "ussd-console backup --to /media/usb",
                                       "ussd-console backup verify /media/usb/ussd-backup-20250508T140000Z.tar.gz.age --identity key.txt"))
    p.add_argument("--to", metavar="DIR", help=_("the folder to write it in (default [backup] dir or <home>/backups)"))
    p.set_defaults(handler=cmd_backup)
    act = p.add_subparsers(dest="backup_command", metavar="ACTION")
    q = act.add_parser("verify", parents=[common], help=_("check a backup whole and sound (exit 0), damaged (1)"),
                       **with_examples("ussd-console backup verify backups/ussd-backup-20250508T140000Z.tar.gz",
                                       "ussd-console backup verify /media/usb/ussd-backup-20250508T140000Z.tar.gz.age --identity key.txt"))
    q.add_argument("file", metavar="FILE")
    q.add_argument("--identity", metavar="PATH", help=_("the age identity file, for an encrypted backup"))
    _trust_arguments(q)
    q.set_defaults(handler=cmd_backup_verify)
    q = act.add_parser("key", parents=[common, signing_parser()],
                       help=_("this home's backup key, which signs every backup's manifest; `record` signs it into "
                            "the audit log (an admin)"),
                       **with_examples("ussd-console backup key",
                                       "ussd-console backup key record --operator alice --reason 'new machine'"))
    q.add_argument("key_action", nargs="?", choices=["show", "record"], default="show", metavar="ACTION",
                   help=_("show (default) or record (signed)"))
    q.set_defaults(handler=cmd_backup_key)
    q = sub.add_parser("restore", parents=[common],
                       help=_("verify a backup, then lay it out as a new home (a PostgreSQL one into the empty "
                            "database --db names)"),
                       **with_examples("ussd-console --home /srv/ussd-new restore ussd-backup-20250508T140000Z.tar.gz "
                                       "--checkpoint /media/usb/checkpoint.txt",
                                       "ussd-console --home /srv/ussd-new restore ussd-backup-20250508T140000Z.tar.gz.age --identity key.txt "
                                       "--backup-key 3f2a9c01d4e5b6a7",
                                       "ussd-console --home /srv/ussd-new restore backup.tar.gz --checkpoint checkpoint.txt "
                                       "--db postgresql://ussd@db/ussd_new"))
    q.add_argument("file", metavar="FILE")
    q.add_argument("--identity", metavar="PATH", help=_("the age identity file, for an encrypted backup"))
    _trust_arguments(q)
    q.add_argument("--accept-unsigned", action="store_true",
                   help=_("restore a backup whose manifest is not signed (made before backups were signed); "
                          "nothing proves its config.toml and keys: read them before %(command)s",
                          command="`alerts resume`"))
    q.set_defaults(handler=cmd_restore)


def _trust_arguments(q) -> None:
    q.add_argument("--checkpoint", metavar="FILE|LINE",
                   help=_("a checkpoint kept off the machine (%(command)s: a file, - for stdin, or the line): "
                          "its backup key proves which home made the backup", command="`audit checkpoint`"))
    q.add_argument("--backup-key", metavar="FINGERPRINT",
                   help=_("the fingerprint of the home's backup key (%(command)s), when no checkpoint is at hand",
                          command="`backup key`"))


def _fail(words: str | Text, code: int) -> int:
    """One line on stderr: ``words`` as outside text (an error's own words), or a ``Text`` of ours as it is."""
    told = words if isinstance(words, Text) else safe(words, 600)
    make_console(stderr=True).print(Text(_("backup: "), style="bold red") + told, soft_wrap=True)
    return code


def cmd_backup(args, ctx) -> int:
    home = ctx.open_home()
    config = load_backup_config(home.config)
    folder = Path(args.to).expanduser() if args.to else config.folder(home)
    try:
        made = make_backup(home, ctx.store_target, folder, config.recipients)
    except archive.CannotRun as exc:
        return _fail(said(exc), EXIT_CANNOT)
    if ctx.json:
        print_json({"file": str(made.file), "size": made.size, "encrypted": made.encrypted,
                    "made_at": made.manifest["made_at"], "counts": made.manifest["counts"],
                    "checkpoint": made.manifest["checkpoint"]})
    else:
        out = make_console()
        if not made.encrypted:
            make_console(stderr=True).print(
                Text(_("note: no [backup] recipients in config.toml: this backup is NOT encrypted; keep it safe")),
                soft_wrap=True)
        c = made.manifest["counts"]
        what = _("%(size)s; %(cases)s, %(entries)s", size=_bytes(made.size), cases=_cases(c["cases"]),
                 entries=_entries(c["audit_entries"]))
        template = (_("backup written: %(file)s (%(what)s, encrypted)") if made.encrypted
                    else _("backup written: %(file)s (%(what)s)"))
        out.print(assembled(template, file=safe(str(made.file), 1000), what=what), soft_wrap=True)
    if made.manifest.get("checkpoint") is None:
        make_console(stderr=True).print(assembled(_("warning: the audit log does not verify: %(reason)s"),
                                                  reason=safe(made.manifest.get("audit_problem") or "", 400)),
                                        soft_wrap=True)
    elif " backup=" not in made.manifest["checkpoint"] and not ctx.json:
        make_console(stderr=True).print(Text(_(
            "note: this home's backup key is not recorded in the audit log yet, so a restore on another machine "
            "has no checkpoint to prove this backup's origin: an admin runs %(command)s once",
            command="`ussd-console backup key record --operator NAME --reason TEXT`")), soft_wrap=True)
    return 0


def _bytes(n: int) -> str:
    return ngettext("%(n)s byte", "%(n)s bytes", n, n=number(n))


def _cases(n: int) -> str:
    return ngettext("%(n)s case", "%(n)s cases", n, n=number(n))


def _entries(n: int) -> str:
    return ngettext("%(n)s audit entry", "%(n)s audit entries", n, n=number(n))


def _pg_server(args, ctx) -> str | None:
    """Where a PostgreSQL backup's dump may be restored for a check: ``--db``, else the home's store."""
    from core.config import store_target
    from core.store.backend import is_postgres_url

    try:
        target = getattr(args, "db", None) or store_target(ctx.home)
    except ValueError:
        return None
    return target if is_postgres_url(target) else None


def _note_verified(ctx, file: Path, manifest: dict) -> str | None:
    """A verified backup of this home counts, wherever it was written, for ``status`` and the
    console alike: as made at its signed date, or now if that is later. Returns why it does not
    count, or None."""
    from core.backup import schedule

    home = ctx.home
    if not Path(home.root).is_dir():
        return None  # checked on a machine with no home (the drill's laptop): nothing to count it for
    why = origin.counts_for(_store_target(ctx), manifest)
    if why is not None:
        return why
    try:
        folder = load_backup_config(home.config).folder(home).resolve()
        schedule.note_verified(home, file.resolve(), origin.verified_at(manifest.get("made_at")), folder=folder)
    except (OSError, ValueError):
        pass  # the mark is a convenience; the verdict above stands
    return None


def _store_target(ctx) -> str | None:
    try:
        return ctx.store_target
    except ValueError:
        return None


def _trust(args, ctx, home_too: bool) -> origin.Trust:
    """The backup keys accepted as this home's: the home's own and its log's (``home_too``), and
    the anchors given by hand."""
    given = origin.trust_given(args.backup_key, args.checkpoint, getattr(args, "accept_unsigned", False))
    if not home_too:
        return given
    return origin.trust_of_home(ctx.home, _store_target(ctx), given)


def cmd_backup_verify(args, ctx) -> int:
    try:
        trust = _trust(args, ctx, home_too=True)
        manifest = verify(Path(args.file), args.identity, server=_pg_server(args, ctx), trust=trust)
    except archive.CannotRun as exc:
        return _fail(said(exc), EXIT_CANNOT)
    except archive.BackupError as exc:
        if ctx.json:
            print_json({"file": args.file, "ok": False, "why": str(exc)})
        return _fail(assembled(_("BAD: %(reason)s"), reason=safe(said(exc), 600)), EXIT_BAD)
    not_counted = _note_verified(ctx, Path(args.file), manifest)
    if ctx.json:
        print_json({"file": args.file, "ok": True, "made_at": manifest["made_at"], "counts": manifest["counts"],
                    "checkpoint": manifest["checkpoint"], "software_version": manifest["software_version"],
                    "schema_version": manifest["schema_version"], "store_kind": archive.store_kind(manifest),
                    **manifest["verified"]})
    else:
        c = manifest["counts"]
        what = _("%(cases)s, %(frames)s, %(conflicts)s, %(entries)s", cases=_cases(c["cases"]),
                 frames=ngettext("%(n)s frame kept", "%(n)s frames kept", c["frames_kept"], n=number(c["frames_kept"])),
                 conflicts=ngettext("%(n)s conflict open", "%(n)s conflicts open", c["conflicts_open"],
                                    n=number(c["conflicts_open"])), entries=_entries(c["audit_entries"]))
        make_console().print(assembled(_("backup OK: %(file)s (%(what)s)"), file=safe(args.file, 1000), what=what),
                             soft_wrap=True)
        checked = "; ".join(map(in_language, manifest["verified"]["checked"]))  # kept in English, said here
        make_console().print(Text(_("checked: %(what)s", what=checked)), soft_wrap=True)
    _not_checked(manifest)
    if not_counted:
        make_console(stderr=True).print(assembled(_("note: it does not count as this home's verified backup: "
                                                    "%(reason)s"), reason=safe(in_language(not_counted), 600)), soft_wrap=True)
    return 0


def cmd_restore(args, ctx) -> int:
    if not getattr(args, "home", None):
        return _fail(Text(_("say where to restore with --home NEW (a new folder)")), EXIT_CANNOT)
    home = Home.resolve(args.home)
    try:
        trust = _trust(args, ctx, home_too=False)
        manifest = restore(Path(args.file), home, args.identity, db=getattr(args, "db", None), trust=trust)
    except archive.CannotRun as exc:
        return _fail(said(exc), EXIT_CANNOT)
    except archive.BackupError as exc:
        origin_words = str(exc).startswith(("not made by this home", "manifest not signed"))
        return _fail(assembled(_("not restored: %(reason)s") if origin_words
                               else _("not restored, the backup is damaged: %(reason)s"), reason=safe(said(exc), 600)),
                     EXIT_BAD)
    if ctx.json:
        print_json({"home": str(home.root), "restored": args.file, "counts": manifest["counts"],
                    "checkpoint": manifest["checkpoint"], "store_kind": archive.store_kind(manifest)})
    else:
        make_console().print(assembled(_("restored into %(home)s; now: %(command)s"), home=safe(str(home.root), 1000),
                                       command=f"ussd-console --home {home.root} audit verify"), soft_wrap=True)
        make_console().print(Text(_("its alert targets are paused: read [alerts] in its config.toml, then an admin "
                                    "signs %(resume)s; record this machine's backup key with %(record)s",
                                    resume="`ussd-console alerts resume`", record="`ussd-console backup key record`")),
                             soft_wrap=True)
    _not_checked(manifest)
    return 0


def _not_checked(manifest: dict) -> None:
    for words in manifest["verified"]["not_checked"]:
        make_console(stderr=True).print(assembled(_("note: not checked: %(what)s"), what=safe(in_language(words), 600)),
                                        soft_wrap=True)


def cmd_backup_key(args, ctx) -> int:
    home = ctx.open_home()
    try:
        info = origin.describe_key(home, _store_target(ctx))
    except archive.CannotRun as exc:
        return _fail(said(exc), EXIT_CANNOT)
    if args.key_action == "record":
        return _record_key(args, ctx, info)
    if ctx.json:
        print_json({k: info[k] for k in ("file", "public_key", "fingerprint", "recorded", "in_force")})
        return 0
    from core.signing.keys import short_fingerprint

    state = (_("recorded in the audit log: checkpoints carry it") if info["in_force"] else
             _("recorded in the audit log earlier, but another key is in force") if info["recorded"] else
             _("NOT recorded in the audit log yet: an admin runs %(command)s",
               command="`ussd-console backup key record`"))
    make_console().print(Text(_("backup key %(fingerprint)s (%(short)s); %(state)s", fingerprint=info["fingerprint"],
                                short=short_fingerprint(info["fingerprint"]), state=state)), soft_wrap=True)
    return 0


def _record_key(args, ctx, info: dict) -> int:
    from core.signing.backup_record import RECORD_KEY
    from core.store.home_identity import home_id

    from .signing import run_signed

    return run_signed(ctx, args, RECORD_KEY, {"public_key": info["public_key"], "home_id": home_id(ctx.receiver.db)},
                      done=lambda result: _key_recorded(ctx, info, result))


def _key_recorded(ctx, info: dict, result: dict) -> int:
    name = result["entry"]["operator"]
    entry = result["entry"]
    if ctx.json:
        print_json({"fingerprint": info["fingerprint"], "audit_seq": entry["seq"], "operator": entry["operator"]})
    else:
        make_console().print(Text(_("backup key %(fingerprint)s recorded (signed audit entry #%(seq)s by %(operator)s); "
                                    "keep the new checkpoint off the machine: %(command)s",
                                    fingerprint=info["fingerprint"][:16], seq=entry["seq"], operator=name,
                                    command="ussd-console audit checkpoint")), soft_wrap=True)
    return 0
