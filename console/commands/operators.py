"""Operators and signed actions: operator add/list/retire/adopt, resolve, retention set/show.

A signing command signs through ``signing.run_signed``: exactly what will be signed
first, then the passphrase, then the action and its entry in one transaction.
"""

from __future__ import annotations

import argparse
import sys

from rich.text import Text

from console.errors import CommandError
from console.render import make_console, print_json, table
from core.i18n import _, ngettext, number
from core.rules.text import in_language
from core.signing import actions, audit, countersign
from core.signing.keys import check_name, key_path, short_fingerprint
from core.signing import operator_changes
from core.signing.operator_add import add_operator
from core.signing.operators import ADD_REASON, list_operators, site_names
from core.signing.roles import ROLES
from core.signing.passphrases import ADVICE, PASSPHRASE_MIN, REFUSAL, weakness

from .audit import print_retention_fault
from . import signing as sign_cli
from .common import add_paging, examples, minute, retention_length, retention_words, with_examples
from .signing import print_pending, print_signed, run_signed, signer_name, signing_parser, unlock


def register(sub, common) -> None:
    signing = signing_parser()

    p = sub.add_parser("operator", parents=[common], help=_("operators and their signing keys"),
                       **with_examples("ussd-console operator list", "ussd-console operator add alice",
                                       "ussd-console help operator add"))
    ops = p.add_subparsers(dest="operator_command", metavar="ACTION", required=True)
    q = ops.add_parser("add", parents=[common],
                       help=_("create a key pair for a new operator (signed: by an active operator, after the first)"),
                       **with_examples("ussd-console operator add alice                                  "
                                       "the first operator: every role",
                                       "ussd-console operator add bob --role admin --operator alice       "
                                       "approved by alice",
                                       "ussd-console operator add carol --role dispatcher --operator alice "
                                       "--reason 'night shift'"))
    q.add_argument("name", metavar="NAME")
    q.add_argument("--passphrase-file", metavar="PATH",
                   help=_("read the new operator's passphrase from the first line of PATH"))
    q.add_argument("--operator", metavar="NAME", help=_("the active operator who approves (not for the first one)"))
    q.add_argument("--operator-passphrase-file", metavar="PATH",
                   help=_("read the approving operator's passphrase from the first line of PATH"))
    q.add_argument("--reason", metavar="TEXT", default=ADD_REASON, help=_("why (default: %(reason)r)", reason=ADD_REASON))
    q.add_argument("--role", dest="roles", action="append", metavar="ROLE",
                   help=_("a role the new operator holds (%(roles)s); repeat for more; required after the first "
                          "operator, who always holds every role", roles=", ".join(ROLES)))
    q.set_defaults(handler=cmd_operator_add, writes=True)
    for verb, text in (("grant", _("give an operator a role (signed by another admin)")),
                       ("revoke", _("take a role from an operator (signed by another admin; never the last admin)"))):
        q = ops.add_parser(verb, parents=[common, signing], help=text, **with_examples(
            f"ussd-console operator {verb} bob resolver --operator alice --reason 'covers the night shift'"))
        q.add_argument("name", metavar="NAME")
        q.add_argument("role", metavar="ROLE", help=", ".join(ROLES))
        q.set_defaults(handler=cmd_operator_role, role_change=verb, writes=True)
    q = ops.add_parser("list", parents=[common], help=_("names, roles, key fingerprints, when added and retired"),
                       **with_examples("ussd-console operator list", "ussd-console operator list --json"))
    q.set_defaults(handler=cmd_operator_list)
    q = ops.add_parser("retire", parents=[common, signing],
                       help=_("stop a key from signing (signed by an active operator); its old signatures stay valid"),
                       **with_examples("ussd-console operator retire carol --operator alice --reason 'left the team'"))
    q.add_argument("name", metavar="NAME")
    q.set_defaults(handler=cmd_operator_retire, writes=True)
    q = ops.add_parser("adopt", parents=[common, signing],
                       help=_("once, after upgrading: sign the operators added before operator changes were signed"),
                       **with_examples("ussd-console operator adopt --operator alice --reason 'upgrade to signed operators'"))
    q.set_defaults(handler=cmd_operator_adopt, writes=True)

    p = sub.add_parser("resolve", parents=[common, signing], help=_("resolve a conflict held in quarantine (signed)"),
                       epilog=examples('ussd-console resolve 12 --keep-first --operator alice --reason "site confirmed"'),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("id", metavar="ID", help=_("the conflict's id: the id column of %(command)s",
                                              command="`ussd-console quarantine`"))
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--keep-first", dest="decision", action="store_const", const=actions.KEEP_FIRST,
                     help=_("dismiss the new version; the ledger stays"))
    how.add_argument("--accept-correction", dest="decision", action="store_const",
                     const=actions.ACCEPT_CORRECTION,
                     help=_("the ledger takes the new version's values; the old ones go to the case history"))
    p.set_defaults(handler=cmd_resolve, writes=True)

    p = sub.add_parser("retention", parents=[common],
                       help=_("how long frame ids are remembered to catch re-sends (show; set, signed)"),
                       **with_examples("ussd-console retention show",
                                       'ussd-console retention set 45 --operator alice --reason "long field trips"'))
    ret = p.add_subparsers(dest="retention_command", metavar="ACTION", required=True)
    q = ret.add_parser("show", parents=[common], help=_("the policy in force and its history"),
                       **with_examples("ussd-console retention show", "ussd-console retention show --limit 5 --json"))
    add_paging(q, offset=False, limit=20)
    q.set_defaults(handler=cmd_retention_show)
    q = ret.add_parser("set", parents=[common, signing],
                       help=_("change retention (signed; below 30 days an exception, below 3 days refused)"),
                       epilog=examples('ussd-console retention set 10 --operator alice --reason "disk nearly full"'),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("days", metavar="DAYS", help=_("days of dedup state to keep, such as 30 or 3.5"))
    q.set_defaults(handler=cmd_retention_set, writes=True)


# -- passphrases ------------------------------------------------------------------
ASK_TIMES = 3  # a new passphrase that is too short or mistyped is asked again, this many times in all


def _passphrase(args, name: str, twice: bool = False, sites: tuple[str, ...] | list[str] = ()) -> str:
    if args.passphrase_file:
        return sign_cli.read_passphrase_file(args.passphrase_file)
    if not twice:
        return sign_cli.ask(_("passphrase for %(name)s: ", name=name))
    for attempt in range(1, ASK_TIMES + 1):
        first = sign_cli.ask(_("new passphrase for %(name)s (at least %(n)s characters): ", name=name,
                               n=number(PASSPHRASE_MIN)))
        why = weakness(first, name, sites)
        if len(first) < PASSPHRASE_MIN:
            print(ngettext("too short: %(n)s character, at least %(min)s needed; a short sentence is best",
                           "too short: %(n)s characters, at least %(min)s needed; a short sentence is best",
                           len(first), n=number(len(first)), min=number(PASSPHRASE_MIN)), file=sys.stderr)
        elif why is not None:
            print(_(REFUSAL, why=in_language(why), advice=_(ADVICE)), file=sys.stderr)
        elif sign_cli.ask(_("passphrase for %(name)s (again): ", name=name)) != first:
            print(_("the two passphrases differ"), file=sys.stderr)
        else:
            return first
    raise CommandError.told(_("no passphrase after %(n)s tries; nothing was created"), ours={"n": number(ASK_TIMES)})


# -- operator ----------------------------------------------------------------------
def cmd_operator_add(args, ctx) -> int:
    name = check_name(args.name)
    receiver = ctx.receiver
    reason = audit.check_reason(args.reason)
    sponsor = None
    if list_operators(receiver):
        if not args.operator:
            raise CommandError.told(_("a new operator is approved by an active one: name them with --operator NAME"))
        if not args.roles:
            raise CommandError.told(_("name the roles %(name)s holds with --role ROLE (%(roles)s; repeat for more); "
                                      "only the first operator of a home holds every role without asking"),
                                    name=name, ours={"roles": ", ".join(ROLES)})
        approver = check_name(args.operator)
        countersign.check(ctx.home, receiver, approver, "operator.add")  # before any passphrase is asked
        sponsor = unlock(ctx, args, approver, passphrase_file=args.operator_passphrase_file or "",
                          prompt=_("passphrase for %(name)s (approving): ", name=approver))
    passphrase = _passphrase(args, name, twice=True, sites=site_names(receiver))
    info = add_operator(ctx.home, receiver, name, passphrase, sponsor=sponsor, reason=reason, roles=args.roles)
    path = key_path(ctx.home, name)
    if "pending" in info:
        return print_pending(ctx, {**info, "key_file": str(path)},
                             _("key file written (encrypted, mode 0600): %(path)s; %(name)s can sign once approved",
                               path=path, name=name))
    if ctx.json:
        print_json({**info, "key_file": str(path)})
        return 0
    out = make_console()
    out.print(Text(_("operator %(name)s added; key fingerprint %(fingerprint)s; roles: %(roles)s", name=name,
                     fingerprint=short_fingerprint(info["fingerprint"]), roles=", ".join(info["roles"]))))
    out.print(Text(_("private key (encrypted with the passphrase, mode 0600): %(path)s", path=path)), soft_wrap=True)
    out.print(Text(_("signed audit entry #%(seq)s by %(operator)s", seq=info["entry"]["seq"],
                     operator=info["entry"]["operator"])), soft_wrap=True)
    return 0


def cmd_operator_list(args, ctx) -> int:
    rows = list_operators(ctx.receiver)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    name, fingerprint, added, status = _("name"), _("key fingerprint"), _("added"), _("status")
    make_console().print(table(
        _("Operators"), [name, fingerprint, added, status, _("roles")],
        [(r["name"], short_fingerprint(r["fingerprint"]), minute(r["added_at"]),
          Text(_("retired %(time)s", time=minute(r["retired_at"])) if r["retired_at"] else _("active")),
          Text(_("every role")) if len(r["roles"]) == len(ROLES) else ", ".join(r["roles"]) or "-") for r in rows],
        codes=(name, fingerprint, added, status), drop=(added,),
    ))
    return 0


def cmd_operator_retire(args, ctx) -> int:
    name = check_name(args.name)
    return run_signed(ctx, args, operator_changes.RETIRE, {"name": name},
                      done=lambda result: _changed(ctx, operator_changes.RETIRE, result, name))


def cmd_operator_role(args, ctx) -> int:
    by, target = signer_name(args), check_name(args.name)
    if by == target:  # refused before the passphrase is asked; the plan refuses it again
        raise CommandError.told(_("nobody grants or revokes their own roles: another admin signs a change to "
                                  "%(name)s's"), name=by)
    change = operator_changes.GRANT if args.role_change == "grant" else operator_changes.REVOKE
    return run_signed(ctx, args, change, {"name": target, "role": args.role},
                      done=lambda result: _changed(ctx, change, result, target))


def _changed(ctx, action, result: dict, name: str) -> int:
    result = operator_changes.info_last(result, ctx.receiver, name)
    if "pending" in result:
        return print_pending(ctx, result)
    return print_signed(ctx, result, action.summary(result))


def cmd_operator_adopt(args, ctx) -> int:
    return run_signed(ctx, args, operator_changes.ADOPT, {})


# -- signed actions ----------------------------------------------------------------
def cmd_resolve(args, ctx) -> int:
    return run_signed(ctx, args, actions.resolution(args.decision), {"quarantine_id": args.id})


def cmd_retention_set(args, ctx) -> int:
    return run_signed(ctx, args, actions.RETENTION, {"days": args.days})


def cmd_retention_show(args, ctx) -> int:
    receiver = ctx.receiver
    policy = receiver.retention()
    history = actions.policy_history(receiver, limit=args.limit)
    if ctx.json:
        print_json({"policy": policy, "history": history})
        return 0
    out = make_console()
    out.print(Text(_("retention: %(policy)s", policy=retention_words(policy))))
    print_retention_fault(policy)
    set_at, retention, kind, set_by, entry = _("set at"), _("retention"), _("kind"), _("set by"), _("audit entry")
    out.print(table(
        _("Retention history"), [set_at, retention, kind, set_by, entry, _("reason")],
        [(minute(p["set_at"]), Text(retention_length(p["retention_seconds"])),
          Text(_("exception") if p["is_exception"] else _("policy")),
          p["set_by"], p["audit_id"] if p["audit_id"] is not None else "-", p["reason"] or "-") for p in history],
        codes=(set_at, retention, kind, set_by), drop=(entry,),
    ))
    return 0
