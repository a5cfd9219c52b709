"""Operators and signed actions: operator add/list/retire, resolve, retention set/show,
audit verify/show.

A signing command first prints exactly what will be signed, then asks for the
passphrase (never echoed; ``--passphrase-file`` for scripts), then signs and
applies in one transaction.
"""

from __future__ import annotations

import getpass
import sys
import warnings

from rich.text import Text

from console.errors import CommandError
from console.render import make_console, print_json, safe, table, when
from core.rules.retention import describe
from core.signing import actions, audit
from core.signing.operators import (
    add_operator,
    check_name,
    key_path,
    list_operators,
    retire_operator,
    short_fingerprint,
)

EXIT_BAD_LOG = 1


def register(sub, common) -> None:
    signing = _signing_parser()

    p = sub.add_parser("operator", parents=[common], help="operators and their signing keys")
    ops = p.add_subparsers(dest="operator_command", metavar="ACTION", required=True)
    q = ops.add_parser("add", parents=[common], help="create a key pair for a new operator")
    q.add_argument("name", metavar="NAME")
    q.add_argument("--passphrase-file", metavar="PATH", help="read the passphrase from the first line of PATH")
    q.set_defaults(handler=cmd_operator_add)
    q = ops.add_parser("list", parents=[common], help="names, key fingerprints, when added and retired")
    q.set_defaults(handler=cmd_operator_list)
    q = ops.add_parser("retire", parents=[common], help="stop a key from signing; its old signatures stay valid")
    q.add_argument("name", metavar="NAME")
    q.set_defaults(handler=cmd_operator_retire)

    p = sub.add_parser("resolve", parents=[common, signing], help="resolve a quarantined conflict (signed)")
    p.add_argument("id", metavar="ID", help="the quarantine id, as listed by `quarantine --json`")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--keep-first", dest="decision", action="store_const", const=actions.KEEP_FIRST,
                     help="dismiss the newcomer; the ledger stays")
    how.add_argument("--accept-correction", dest="decision", action="store_const",
                     const=actions.ACCEPT_CORRECTION,
                     help="the ledger takes the newcomer's values; the old ones go to the case history")
    p.set_defaults(handler=cmd_resolve)

    p = sub.add_parser("retention", parents=[common], help="the retention policy of dedup state")
    ret = p.add_subparsers(dest="retention_command", metavar="ACTION", required=True)
    q = ret.add_parser("show", parents=[common], help="the policy in force and its history")
    q.add_argument("--limit", type=int, default=20)
    q.set_defaults(handler=cmd_retention_show)
    q = ret.add_parser("set", parents=[common, signing],
                       help="change retention (signed; below 30 days an exception, below 3 days refused)")
    q.add_argument("days", metavar="DAYS", help="days of dedup state to keep, such as 30 or 3.5")
    q.set_defaults(handler=cmd_retention_set)

    p = sub.add_parser("audit", parents=[common], help="the signed audit log")
    aud = p.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    q = aud.add_parser("verify", parents=[common], help="check every signature and the hash chain")
    q.add_argument("--head", metavar="HASH", help="a head hash written down earlier; it must still be in the log")
    q.set_defaults(handler=cmd_audit_verify)
    q = aud.add_parser("show", parents=[common], help="the log, newest first")
    q.add_argument("--limit", type=int, default=50)
    q.set_defaults(handler=cmd_audit_show)


def _signing_parser():
    import argparse

    signing = argparse.ArgumentParser(add_help=False)
    signing.add_argument("--operator", metavar="NAME", help="who signs")
    signing.add_argument("--reason", metavar="TEXT", help="why (required, free text, one line)")
    signing.add_argument("--passphrase-file", metavar="PATH",
                         help="read the passphrase from the first line of PATH instead of asking")
    return signing


# -- passphrases ------------------------------------------------------------------
def _read_passphrase_file(path: str) -> str:
    try:
        with open(path, "r", encoding="utf-8") as fh:
            line = fh.readline()
    except OSError as exc:
        raise CommandError(f"cannot read the passphrase file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise CommandError(f"the passphrase file {path} is not UTF-8 text") from None
    line = line.rstrip("\r\n")
    if not line:
        raise CommandError(f"the passphrase file {path} has an empty first line")
    return line


def _ask(prompt: str) -> str:
    """Ask without echo, or refuse: a passphrase is never read where it would show."""
    if not sys.stdin.isatty():
        raise CommandError("no terminal to ask for the passphrase on; use --passphrase-file PATH")
    with warnings.catch_warnings():
        warnings.simplefilter("error", getpass.GetPassWarning)
        try:
            return getpass.getpass(prompt)
        except getpass.GetPassWarning:
            raise CommandError("cannot turn echo off to ask for the passphrase; use --passphrase-file PATH") from None
        except EOFError:
            raise CommandError("no passphrase given") from None


def _passphrase(args, name: str, twice: bool = False) -> str:
    if args.passphrase_file:
        return _read_passphrase_file(args.passphrase_file)
    first = _ask(f"passphrase for {name}: ")
    if twice and _ask(f"passphrase for {name} (again): ") != first:
        raise CommandError("the two passphrases differ; nothing was created")
    return first


def _signer_name(args) -> str:
    if not args.operator:
        raise CommandError("name the signing operator with --operator NAME")
    return check_name(args.operator)


def _reason(args) -> str:
    if args.reason is None:
        raise CommandError("give the reason with --reason TEXT (required for every signed action)")
    return audit.check_reason(args.reason)


# -- operator ----------------------------------------------------------------------
def cmd_operator_add(args, ctx) -> int:
    name = check_name(args.name)
    receiver = ctx.receiver
    passphrase = _passphrase(args, name, twice=True)
    info = add_operator(ctx.home, receiver, name, passphrase)
    path = key_path(ctx.home, name)
    if ctx.json:
        print_json({**info, "key_file": str(path)})
        return 0
    out = make_console()
    out.print(Text(f"operator {name} added; key fingerprint {short_fingerprint(info['fingerprint'])}"))
    out.print(Text(f"private key (encrypted with the passphrase, mode 0600): {path}"), soft_wrap=True)
    return 0


def cmd_operator_list(args, ctx) -> int:
    rows = list_operators(ctx.receiver)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    make_console().print(table(
        "Operators", ["name", "fingerprint", "added", "retired"],
        [(r["name"], short_fingerprint(r["fingerprint"]), when(r["added_at"]),
          when(r["retired_at"]) if r["retired_at"] else "active") for r in rows],
    ))
    return 0


def cmd_operator_retire(args, ctx) -> int:
    info = retire_operator(ctx.receiver, args.name)
    if ctx.json:
        print_json(info)
    else:
        make_console().print(Text(f"operator {info['name']} retired; signatures it made stay verifiable"))
    return 0


# -- signed actions ----------------------------------------------------------------
def _show_preview(ctx, preview) -> None:
    if ctx.json:
        return
    out = make_console()
    out.print(Text("About to sign:", style="bold"))
    for line in preview.lines:
        out.print(Text("  ") + safe(line, 600), soft_wrap=True)


def _print_signed(ctx, result: dict, summary: str) -> None:
    entry = result["entry"]
    if ctx.json:
        print_json(result)
        return
    out = make_console()
    out.print(Text(summary), soft_wrap=True)
    out.print(Text(f"signed audit entry #{entry['seq']} by {entry['operator']}; head {entry['hash']}"), soft_wrap=True)


def cmd_resolve(args, ctx) -> int:
    receiver = ctx.receiver
    name, reason = _signer_name(args), _reason(args)
    preview = actions.describe_resolve(receiver, args.id, args.decision, name, reason)
    _show_preview(ctx, preview)
    result = actions.resolve(ctx.home, receiver, args.id, args.decision, operator=name,
                             passphrase=_passphrase(args, name), reason=reason, expected=preview)
    summary = f"quarantine #{result['quarantine_id']}: {result['status']}"
    if result["also_resolved"]:
        summary += "; also settled " + ", ".join(f"#{i}" for i in result["also_resolved"])
    _print_signed(ctx, result, summary)
    return 0


def cmd_retention_set(args, ctx) -> int:
    receiver = ctx.receiver
    name, reason = _signer_name(args), _reason(args)
    preview = actions.describe_retention(receiver, args.days, name, reason)
    _show_preview(ctx, preview)
    result = actions.set_retention(ctx.home, receiver, args.days, operator=name,
                                   passphrase=_passphrase(args, name), reason=reason, expected=preview)
    policy = result["retention"]
    kind = "signed exception" if policy["is_exception"] else "policy"
    _print_signed(ctx, result, f"retention is now {describe(policy['retention_seconds'])} ({kind})")
    return 0


def cmd_retention_show(args, ctx) -> int:
    receiver = ctx.receiver
    policy = receiver.retention()
    history = actions.policy_history(receiver, limit=args.limit)
    if ctx.json:
        print_json({"policy": policy, "history": history})
        return 0
    out = make_console()
    kind = "signed exception" if policy["is_exception"] else "policy"
    out.print(Text(f"retention: {describe(policy['retention_seconds'])} ({kind}, set by {policy['set_by']})"))
    out.print(table(
        "Retention history", ["set at", "retention", "kind", "set by", "audit entry", "reason"],
        [(when(p["set_at"]), describe(p["retention_seconds"]), "exception" if p["is_exception"] else "policy",
          p["set_by"], p["audit_id"] if p["audit_id"] is not None else "-", p["reason"] or "-") for p in history],
    ))
    return 0


# -- audit ------------------------------------------------------------------------
def cmd_audit_verify(args, ctx) -> int:
    receiver = ctx.receiver
    result = audit.verify(receiver, expect_head=args.head)
    head = audit.head(receiver)
    if ctx.json:
        print_json({**result._asdict(), "head": head.hash, "head_count": head.count})
    else:
        out = make_console()
        if result.ok:
            out.print(Text(f"audit log OK: {result.count} entries verified; head {head.hash}"), soft_wrap=True)
        else:
            if result.first_bad_seq is not None:
                where, after = f" at entry #{result.first_bad_seq}", f" ({result.count} entries verified before it)"
            else:  # the chain is sound; a table disagrees with it
                where, after = "", f" ({result.count} entries verified; the tables disagree with them)"
            out.print(Text(f"audit log BAD{where}: ", style="bold red") + safe(result.why) + Text(after),
                      soft_wrap=True)
    return 0 if result.ok else EXIT_BAD_LOG


def _when(at) -> str:
    """A stored time, or the stored value itself when it is no time (a tampered log)."""
    try:
        return when(float(at))
    except (TypeError, ValueError, OverflowError, OSError):
        return str(at)


def cmd_audit_show(args, ctx) -> int:
    receiver = ctx.receiver
    rows = audit.entries(receiver, limit=args.limit, newest_first=True)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    head = audit.head(receiver)
    out = make_console()
    out.print(table(
        f"Audit log ({head.count} entries, newest first)",
        ["#", "time", "operator", "action", "target", "reason", "hash"],
        [(r["seq"], _when(r["at"]), r["operator"], r["action"], r["target"], r["reason"], str(r["hash"])[:16])
         for r in rows],
    ))
    out.print(Text(f"head {head.hash}"), soft_wrap=True)
    return 0
