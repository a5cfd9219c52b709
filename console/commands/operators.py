"""Operators and signed actions: operator add/list/retire/adopt, resolve, retention set/show.

A signing command first prints exactly what will be signed, then asks for the
passphrase (never echoed; ``--passphrase-file`` for scripts), then signs and
applies in one transaction.
"""

from __future__ import annotations

import argparse
import getpass
import re
import sys
import warnings

from rich.text import Text

from console.errors import CommandError
from console.render import make_console, print_json, safe, table
from core.home import PrivateFileError, read_private
from core.rules.retention import describe
from core.rules.words import resolution_words
from core.signing import actions, audit, countersign
from core.signing.keys import ActionError, check_name, key_path, short_fingerprint
from core.signing.operators import (
    ADD_REASON,
    add_operator,
    adopt_operators,
    adoption_list,
    grant_role,
    list_operators,
    load_signer,
    retire_operator,
    revoke_role,
    site_names,
)
from core.signing.roles import ROLES
from core.signing.passphrases import ADVICE, PASSPHRASE_MIN, weakness

from .audit import print_retention_fault
from .common import add_paging, examples, minute, retention_words, with_examples


def register(sub, common) -> None:
    signing = _signing_parser()

    p = sub.add_parser("operator", parents=[common], help="operators and their signing keys",
                       **with_examples("ussd-console operator list", "ussd-console operator add alice",
                                       "ussd-console help operator add"))
    ops = p.add_subparsers(dest="operator_command", metavar="ACTION", required=True)
    q = ops.add_parser("add", parents=[common],
                       help="create a key pair for a new operator (signed: by an active operator, after the first)",
                       **with_examples("ussd-console operator add alice                                  "
                                       "the first operator: every role",
                                       "ussd-console operator add bob --role admin --operator alice       "
                                       "approved by alice",
                                       "ussd-console operator add carol --role dispatcher --operator alice "
                                       "--reason 'night shift'"))
    q.add_argument("name", metavar="NAME")
    q.add_argument("--passphrase-file", metavar="PATH",
                   help="read the new operator's passphrase from the first line of PATH")
    q.add_argument("--operator", metavar="NAME", help="the active operator who approves (not for the first one)")
    q.add_argument("--operator-passphrase-file", metavar="PATH",
                   help="read the approving operator's passphrase from the first line of PATH")
    q.add_argument("--reason", metavar="TEXT", default=ADD_REASON, help=f"why (default: {ADD_REASON!r})")
    q.add_argument("--role", dest="roles", action="append", metavar="ROLE",
                   help=f"a role the new operator holds ({', '.join(ROLES)}); repeat for more; "
                        "required after the first operator, who always holds every role")
    q.set_defaults(handler=cmd_operator_add, writes=True)
    for verb, text in (("grant", "give an operator a role (signed by another admin)"),
                       ("revoke", "take a role from an operator (signed by another admin; never the last admin)")):
        q = ops.add_parser(verb, parents=[common, signing], help=text, **with_examples(
            f"ussd-console operator {verb} bob resolver --operator alice --reason 'covers the night shift'"))
        q.add_argument("name", metavar="NAME")
        q.add_argument("role", metavar="ROLE", help=", ".join(ROLES))
        q.set_defaults(handler=cmd_operator_role, role_change=verb, writes=True)
    q = ops.add_parser("list", parents=[common], help="names, roles, key fingerprints, when added and retired",
                       **with_examples("ussd-console operator list", "ussd-console operator list --json"))
    q.set_defaults(handler=cmd_operator_list)
    q = ops.add_parser("retire", parents=[common, signing],
                       help="stop a key from signing (signed by an active operator); its old signatures stay valid",
                       **with_examples("ussd-console operator retire carol --operator alice --reason 'left the team'"))
    q.add_argument("name", metavar="NAME")
    q.set_defaults(handler=cmd_operator_retire, writes=True)
    q = ops.add_parser("adopt", parents=[common, signing],
                       help="once, after upgrading: sign the operators added before operator changes were signed",
                       **with_examples("ussd-console operator adopt --operator alice --reason 'upgrade to signed operators'"))
    q.set_defaults(handler=cmd_operator_adopt, writes=True)

    p = sub.add_parser("resolve", parents=[common, signing], help="resolve a conflict held in quarantine (signed)",
                       epilog=examples('ussd-console resolve 12 --keep-first --operator alice --reason "site confirmed"'),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("id", metavar="ID", help="the conflict's id: the id column of `ussd-console quarantine`")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--keep-first", dest="decision", action="store_const", const=actions.KEEP_FIRST,
                     help="dismiss the new version; the ledger stays")
    how.add_argument("--accept-correction", dest="decision", action="store_const",
                     const=actions.ACCEPT_CORRECTION,
                     help="the ledger takes the new version's values; the old ones go to the case history")
    p.set_defaults(handler=cmd_resolve, writes=True)

    p = sub.add_parser("retention", parents=[common],
                       help="how long frame ids are remembered to catch re-sends (show; set, signed)",
                       **with_examples("ussd-console retention show",
                                       'ussd-console retention set 45 --operator alice --reason "long field trips"'))
    ret = p.add_subparsers(dest="retention_command", metavar="ACTION", required=True)
    q = ret.add_parser("show", parents=[common], help="the policy in force and its history",
                       **with_examples("ussd-console retention show", "ussd-console retention show --limit 5 --json"))
    add_paging(q, offset=False, limit=20)
    q.set_defaults(handler=cmd_retention_show)
    q = ret.add_parser("set", parents=[common, signing],
                       help="change retention (signed; below 30 days an exception, below 3 days refused)",
                       epilog=examples('ussd-console retention set 10 --operator alice --reason "disk nearly full"'),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("days", metavar="DAYS", help="days of dedup state to keep, such as 30 or 3.5")
    q.set_defaults(handler=cmd_retention_set, writes=True)


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
    """The first line of a passphrase file only its owner can read, under the checks a key file
    gets (``core.home.read_private``); a named pipe a script writes into is taken too."""
    try:
        data = read_private(path, "the passphrase file", pipe=True)
    except PrivateFileError as exc:
        raise CommandError(str(exc)) from None
    try:
        line = re.split(rb"\r\n|\r|\n", data, maxsplit=1)[0].decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"the passphrase file {path} is not UTF-8 text") from None
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


ASK_TIMES = 3  # a new passphrase that is too short or mistyped is asked again, this many times in all


def _passphrase(args, name: str, twice: bool = False, sites: tuple[str, ...] | list[str] = ()) -> str:
    if args.passphrase_file:
        return _read_passphrase_file(args.passphrase_file)
    if not twice:
        return _ask(f"passphrase for {name}: ")
    for attempt in range(1, ASK_TIMES + 1):
        first = _ask(f"new passphrase for {name} (at least {PASSPHRASE_MIN} characters): ")
        why = weakness(first, name, sites)
        if len(first) < PASSPHRASE_MIN:
            print(f"too short: {len(first)} characters, at least {PASSPHRASE_MIN} needed; a short sentence is best",
                  file=sys.stderr)
        elif why is not None:
            print(f"{why}; {ADVICE}", file=sys.stderr)
        elif _ask(f"passphrase for {name} (again): ") != first:
            print("the two passphrases differ", file=sys.stderr)
        else:
            return first
    raise CommandError(f"no passphrase after {ASK_TIMES} tries; nothing was created")


UNLOCK_TRIES = 3  # a passphrase mistyped at the prompt is asked again, this many times in all


def _unlock(ctx, args, name: str, passphrase_file: str | None = None, prompt: str | None = None):
    """The operator's key, unlocked: with ``--passphrase-file`` once, at the terminal up to three tries.

    Each wrong try is a failed unlock like any other (``load_signer``: logged in the home's
    log, counted towards the growing wait); only a wrong passphrase is asked again, never
    a missing operator or key file.
    """
    path = passphrase_file if passphrase_file is not None else args.passphrase_file
    if path:
        return load_signer(ctx.home, ctx.receiver, name, _read_passphrase_file(path))
    for attempt in range(1, UNLOCK_TRIES + 1):
        secret = _ask(prompt or f"passphrase for {name}: ")
        try:
            return load_signer(ctx.home, ctx.receiver, name, secret)
        except ActionError as exc:
            if not str(exc).startswith("wrong passphrase"):
                raise
            if attempt == UNLOCK_TRIES:
                raise CommandError(f"{exc}; {UNLOCK_TRIES} tries, nothing was signed") from None
            left = UNLOCK_TRIES - attempt
            print(f"{exc}; try again ({left} {'try' if left == 1 else 'tries'} left)", file=sys.stderr, flush=True)
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


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
    reason = audit.check_reason(args.reason)
    sponsor = None
    if list_operators(receiver):
        if not args.operator:
            raise CommandError("a new operator is approved by an active one: name them with --operator NAME")
        if not args.roles:
            raise CommandError(f"name the roles {name} holds with --role ROLE ({', '.join(ROLES)}; repeat for more); "
                               "only the first operator of a home holds every role without asking")
        approver = check_name(args.operator)
        countersign.check(ctx.home, receiver, approver, "operator.add")  # before any passphrase is asked
        sponsor = _unlock(ctx, args, approver, passphrase_file=args.operator_passphrase_file or "",
                          prompt=f"passphrase for {approver} (approving): ")
    passphrase = _passphrase(args, name, twice=True, sites=site_names(receiver))
    info = add_operator(ctx.home, receiver, name, passphrase, sponsor=sponsor, reason=reason, roles=args.roles)
    path = key_path(ctx.home, name)
    if "pending" in info:
        return print_pending(ctx, {**info, "key_file": str(path)},
                             f"key file written (encrypted, mode 0600): {path}; {name} can sign once approved")
    if ctx.json:
        print_json({**info, "key_file": str(path)})
        return 0
    out = make_console()
    out.print(Text(f"operator {name} added; key fingerprint {short_fingerprint(info['fingerprint'])}; "
                   f"roles: {', '.join(info['roles'])}"))
    out.print(Text(f"private key (encrypted with the passphrase, mode 0600): {path}"), soft_wrap=True)
    out.print(Text(f"signed audit entry #{info['entry']['seq']} by {info['entry']['operator']}"), soft_wrap=True)
    return 0


def cmd_operator_list(args, ctx) -> int:
    rows = list_operators(ctx.receiver)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    make_console().print(table(
        "Operators", ["name", "key fingerprint", "added", "status", "roles"],
        [(r["name"], short_fingerprint(r["fingerprint"]), minute(r["added_at"]),
          f"retired {minute(r['retired_at'])}" if r["retired_at"] else "active",
          "every role" if len(r["roles"]) == len(ROLES) else ", ".join(r["roles"]) or "-") for r in rows],
        codes=("name", "key fingerprint", "added", "status"), drop=("added",),
    ))
    return 0


def cmd_operator_retire(args, ctx) -> int:
    receiver = ctx.receiver
    name, reason = _signer_name(args), _reason(args)
    countersign.check(ctx.home, receiver, name, "operator.retire")
    signer = _unlock(ctx, args, name)
    info = retire_operator(receiver, check_name(args.name), signer, reason, home=ctx.home)
    if "pending" in info:
        return print_pending(ctx, info)
    if ctx.json:
        print_json(info)
    else:
        make_console().print(Text(f"operator {info['name']} retired (signed audit entry #{info['entry']['seq']} "
                                  f"by {name}); signatures it made stay verifiable"))
    return 0


def cmd_operator_role(args, ctx) -> int:
    receiver = ctx.receiver
    name, reason = _signer_name(args), _reason(args)
    target = check_name(args.name)
    if name == target:  # refused before the passphrase is asked; the library refuses it again
        raise CommandError(f"nobody grants or revokes their own roles: another admin signs a change to {name}'s")
    change = grant_role if args.role_change == "grant" else revoke_role
    countersign.check(ctx.home, receiver, name, f"operator.{args.role_change}")
    signer = _unlock(ctx, args, name)
    info = change(receiver, target, args.role, signer, reason, home=ctx.home)
    if "pending" in info:
        return print_pending(ctx, info)
    if ctx.json:
        print_json(info)
    else:
        done = "granted to" if args.role_change == "grant" else "revoked from"
        make_console().print(Text(f"role {args.role} {done} {target}; roles now: {', '.join(info['roles']) or 'none'} "
                                  f"(signed audit entry #{info['entry']['seq']} by {name})"))
    return 0


def cmd_operator_adopt(args, ctx) -> int:
    receiver = ctx.receiver
    name, reason = _signer_name(args), _reason(args)
    listed = adoption_list(receiver)
    if not ctx.json:
        out = make_console()
        out.print(Text("About to sign: these operators and keys were registered before operator changes "
                       "were signed; compare each fingerprint with the operator's own record:", style="bold"),
                  soft_wrap=True)
        for op in listed:
            state = "retired" if op["retired_at"] is not None else "active"
            out.print(Text(f"  {op['name']}  key {short_fingerprint(op['fingerprint'])}  {state}"))
    signer = _unlock(ctx, args, name)
    result = adopt_operators(receiver, signer, reason, expected=listed)
    if ctx.json:
        print_json(result)
    else:
        make_console().print(Text(f"{len(listed)} operators adopted into the signed log "
                                  f"(audit entry #{result['entry']['seq']} by {name})"))
    return 0


# -- signed actions ----------------------------------------------------------------
def print_pending(ctx, result: dict, *more: str) -> int:
    """A signed request held for a second admin ([signing] countersign): its id, and how to decide it."""
    if ctx.json:
        print_json(result)
        return 0
    rid, entry = result["pending"], result["entry"]
    out = make_console()
    out.print(Text(f"waiting for a second admin: request {rid} ({result['action']} {result['target']}); "
                   f"nothing is applied until another admin runs `ussd-console approve {rid}`"), soft_wrap=True)
    out.print(Text(f"it expires at {minute(result['expires_at'])}; `ussd-console pending` lists what waits"),
              soft_wrap=True)
    for line in more:
        out.print(Text(line), soft_wrap=True)
    out.print(Text(f"signed audit entry #{entry['seq']} by {entry['operator']}; head {entry['hash']}"), soft_wrap=True)
    return 0


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
                             signer=_unlock(ctx, args, name), reason=reason, expected=preview)
    summary = f"conflict #{result['quarantine_id']}: {resolution_words(result['status'])}"
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
                                   signer=_unlock(ctx, args, name), reason=reason, expected=preview)
    if "pending" in result:
        return print_pending(ctx, result)
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
    out.print(Text(f"retention: {retention_words(policy)}"))
    print_retention_fault(policy)
    out.print(table(
        "Retention history", ["set at", "retention", "kind", "set by", "audit entry", "reason"],
        [(minute(p["set_at"]), describe(p["retention_seconds"]), "exception" if p["is_exception"] else "policy",
          p["set_by"], p["audit_id"] if p["audit_id"] is not None else "-", p["reason"] or "-") for p in history],
        codes=("set at", "retention", "kind", "set by"), drop=("audit entry",),
    ))
    return 0
