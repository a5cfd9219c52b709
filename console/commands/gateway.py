"""``ussd-console gateway add/list/retire``: the gateways that post frames to ``watch --listen``.

Adding and retiring a gateway decides who may write the ledger, so both are
signed operator actions (``--operator``, ``--passphrase-file``, ``--reason``),
reconciled by ``audit verify``. ``add`` prints the path to paste into the
gateway's dashboard once; only its hash is kept.
"""

from __future__ import annotations

import argparse

from rich.text import Text

from console.render import make_console, print_json, table, when
from core.i18n import N_, _
from core.gateways import accounts, signed
from core.gateways.kinds import KINDS

from .signing import print_pending, run_signed, signing_parser


def examples(*lines: str) -> str:
    return _("examples:") + "\n" + "\n".join(f"  {line}" for line in lines)


def minute(ts: float | None) -> str:
    return when(ts)[:16]


def register(sub, common) -> None:
    signing = signing_parser()
    p = sub.add_parser("gateway", parents=[common],
                       help=_("SMS/USSD gateways that post frames straight to `watch --listen` (add, list, retire)"),
                       epilog=examples("ussd-console gateway list", "ussd-console help gateway add"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ops = p.add_subparsers(dest="gateway_command", metavar="ACTION", required=True)
    q = ops.add_parser(
        "add", parents=[common, signing],
        help=_("add a gateway account (signed); prints the path to paste into the gateway, once"),
        epilog=examples("ussd-console gateway add office --kind africastalking --operator alice --reason 'short code'",
                        "ussd-console gateway add phone --kind smsgate --secret-file ~/.smsgate-key "
                        "--operator alice --reason 'field phone'"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("name", metavar="NAME", help=_("1-13 lower-case letters, digits or '_'"))
    signed = ", ".join(kind.name for kind in KINDS.values() if kind.signed)
    urls = ", ".join(kind.name for kind in KINDS.values() if kind.needs_url)
    q.add_argument("--kind", required=True, choices=list(KINDS), metavar="KIND",
                   help=_("one of: %(kinds)s", kinds=", ".join(KINDS)))
    q.add_argument("--secret-file", metavar="PATH",
                   help=_("file (mode 0600) whose first line is the gateway's signing key, auth token or webhook "
                          "secret (%(kinds)s); it stays in that file", kinds=signed))
    q.add_argument("--public-url", metavar="BASE",
                   help=_("the base URL the gateway posts to, such as %(url)s (%(kinds)s signs it)",
                          url="https://receiver.example.org", kinds=urls))
    q.add_argument("--reply", choices=accounts.REPLIES, default="END",
                   help=_("africastalking-ussd: end the session (END, default) or keep it open (CON) after a receipt"))
    q.set_defaults(handler=cmd_gateway_add, writes=True)
    q = ops.add_parser("list", parents=[common], help=_("gateways, who added them, last post and their counts"),
                       epilog=examples("ussd-console gateway list", "ussd-console gateway list --json"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    q.set_defaults(handler=cmd_gateway_list)
    q = ops.add_parser("retire", parents=[common, signing], help=_("retire a gateway (signed): its path answers 404"),
                       epilog=examples("ussd-console gateway retire office --operator alice --reason 'number given up'"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("name", metavar="NAME")
    q.set_defaults(handler=cmd_gateway_retire, writes=True)


def cmd_gateway_add(args, ctx) -> int:
    gateway = accounts.check_name(args.name)
    plan_args, token = signed.prepare_add(gateway, args.kind, secret_file=args.secret_file,
                                          public_url=args.public_url, reply=args.reply)
    return run_signed(ctx, args, signed.ADD, plan_args,
                      done=lambda result: _added(ctx, signed.added(result, plan_args, token)))


def _added(ctx, result: dict) -> int:
    if "pending" in result:
        return print_pending(ctx, result, _("once approved, paste this into the gateway's callback URL; it is shown "
                                            "only now:"),
                             f"  {result.get('url') or result['path']}")
    entry = result.pop("entry")
    if ctx.json:
        print_json({**result, "audit_seq": entry["seq"], "operator": entry["operator"]})
        return 0
    out = make_console()
    out.print(Text(_("gateway %(name)s (%(kind)s) added (signed audit entry #%(seq)s by %(operator)s)",
                     name=result["name"], kind=result["kind"], seq=entry["seq"], operator=entry["operator"])))
    out.print(Text(_("paste this into the gateway's callback URL; it is shown only now:"), style="bold"))
    out.print(Text(f"  {result.get('url') or result['path']}"), soft_wrap=True)
    if "url" not in result:
        out.print(Text("  " + _("(after your receiver's address, such as %(url)s)",
                                url="https://receiver.example.org")))
    return 0


def _rows(ctx) -> list[dict]:
    per_source = ctx.receiver.per_source()
    rows = []
    for name, info in accounts.counts(ctx.receiver.db).items():
        frames = per_source.get(info["source"], {})
        rejects = frames.get("REJECT_BAD_FORMAT", 0) + frames.get("REJECT_BAD_CRC", 0)
        rows.append({"name": name, **info, "frames": frames, "rejects": rejects})
    return rows


def gateway_status(receiver) -> dict[str, dict]:
    """Each gateway's path counts for ``status --json``: posts and frames, retries apart from re-sends."""
    per_source = receiver.per_source()
    out = {}
    for name, info in accounts.counts(receiver.db).items():
        frames = per_source.get(info["source"], {})
        out[name] = {"kind": info["kind"], "path": info["source"], "retired": info["retired_at"] is not None,
                     "last_post": info["last_post"], "accepted": info["posts"], "messages": info["messages"],
                     "webhook_retries": info["webhook_retries"], "reused_ids": info["reused_ids"],
                     "field_resends": frames.get("DUPLICATE", 0),
                     "ignored": info["ignored"], "spooled": info["spooled"], "refused": info["refused"],
                     "refused_by_status": {k.split("_", 1)[1]: info[k] for k in accounts.COUNTS
                                           if k.startswith("refused_")},
                     "frames": frames}
    return out


def print_gateway_status(out, gateways: dict) -> None:
    if not gateways:
        return
    gateway = _("gateway")
    out.print(table(_("Gateways (posts)"), [gateway, _("accepted"), _("retries"), _("reused ids"), _("re-sends"),
                                            _("spooled"), _("refused")],
                    [(name, g["accepted"], g["webhook_retries"], g["reused_ids"], g["field_resends"], g["spooled"],
                      g["refused"]) for name, g in gateways.items()], codes=(gateway,)))


# What each count of `gateway list` counts, said once above the table: a first-time reader takes
# "accepted" for messages, or for posts without the retries, unless told.
COUNTED = N_("accepted: posts taken in, webhook retries included (a post the gateway sends again counts again); "
             "webhook retries: messages among them already taken in before, not offered to the ledger twice; "
             "reused ids: messages whose id was taken before with other content, offered as new; "
             "rejects: frames from the gateway that were not valid; "
             "refused: posts answered 403, 404, 405, 413 or 429, nothing taken in")


def cmd_gateway_list(args, ctx) -> int:
    rows = _rows(ctx)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    out = make_console()
    if not rows:
        out.print(Text(_("Gateways: none (%(command)s)", command="ussd-console help gateway add")))
        return 0
    out.print(Text(_(COUNTED)), soft_wrap=False)
    name, kind, last_post, status = _("name"), _("kind"), _("last post"), _("status")
    out.print(table(
        _("Gateways"), [name, kind, _("added by"), last_post, _("accepted"), _("webhook retries"), _("reused ids"),
                        _("rejects"), _("refused"), status],
        [(r["name"], r["kind"], r["added_by"], minute(r["last_post"]) if r["last_post"] else Text(_("never")),
          r["posts"], r["webhook_retries"], r["reused_ids"], r["rejects"], r["refused"],
          Text(_("retired %(time)s", time=minute(r["retired_at"])) if r["retired_at"] else _("active"))) for r in rows],
        codes=(name, kind, last_post, status),
    ))
    return 0


def cmd_gateway_retire(args, ctx) -> int:
    return run_signed(ctx, args, signed.RETIRE, {"name": args.name}, done=lambda result: _retired(ctx, result))


def _retired(ctx, result: dict) -> int:
    if "pending" in result:
        return print_pending(ctx, result)
    if ctx.json:
        print_json({"name": result["name"], "retired_at": result["retired_at"], "audit_seq": result["entry"]["seq"]})
    else:
        make_console().print(Text(_("gateway %(name)s retired (signed audit entry #%(seq)s by %(operator)s); its path "
                                    "answers 404 from now on", name=result["name"], seq=result["entry"]["seq"],
                                    operator=result["entry"]["operator"])))
    return 0
