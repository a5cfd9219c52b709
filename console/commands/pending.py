"""``ussd-console pending``, ``approve ID`` and ``reject ID``: the second pair of eyes.

With ``[signing] countersign`` in ``config.toml``, an admin's signed retention,
gateway or operator change is held as a request (docs/roles.md). Another
admin approves it (the action applies with the approval, bound to the
request's hash) or any admin rejects it; the requester cannot approve their own.
"""

from __future__ import annotations

from rich.text import Text

from console.render import make_console, print_json, safe, table
from core.signing import countersign, decisions

from .common import minute
from .common import with_examples
from .signing import signer_name, signing_parser, signing_reason, unlock


def register(sub, common) -> None:
    signing = signing_parser()
    p = sub.add_parser("pending", parents=[common],
                       help="signed requests waiting for a second admin ([signing] countersign)",
                       **with_examples("ussd-console pending", "ussd-console pending --json"))
    p.set_defaults(handler=cmd_pending)
    for verb, text in (("approve", "approve a waiting request as a second admin (signed); its action applies"),
                       ("reject", "reject a waiting request (signed by an admin); nothing applies")):
        p = sub.add_parser(verb, parents=[common, signing], help=text,
                           **with_examples(f"ussd-console {verb} 42 --operator bob --reason 'checked with the field office'",
                                           f"ussd-console {verb} 42 --operator bob --reason 'checked' "
                                           "--passphrase-file /run/keys/bob.pass"))
        p.add_argument("id", metavar="ID", help="the request's id: the id column of `ussd-console pending`")
        p.set_defaults(handler=cmd_decide, verb=verb, writes=True)


def cmd_pending(args, ctx) -> int:
    rows = countersign.pending(ctx.receiver)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    out = make_console()
    if not rows:
        out.print(Text("nothing waits for a second admin"))
        return 0
    out.print(table(
        "Waiting for a second admin", ["id", "what", "by", "expires", "status"],
        [(r["id"], r["what"], r["requested_by"], minute(r["expires_at"]), r["status"]) for r in rows],
        codes=("id", "by", "expires", "status"),
    ))
    out.print(Text("approve with `ussd-console approve ID`, reject with `ussd-console reject ID` "
                   "(--json shows each request's reason)"), soft_wrap=True)
    return 0


def cmd_decide(args, ctx) -> int:
    receiver = ctx.receiver
    name, reason = signer_name(args), signing_reason(args)
    request = countersign.decide_check(receiver, args.id, name, args.verb)  # refused before the passphrase
    if not ctx.json:
        out = make_console()
        out.print(Text(f"About to sign: {args.verb} request {request.seq} by {request.operator}:", style="bold"))
        out.print(Text("  ") + safe(countersign.what(request), 300), soft_wrap=True)
        out.print(Text("  their reason: ") + safe(request.reason, 500), soft_wrap=True)
    signer = unlock(ctx, args, name)
    if args.verb == "approve":
        result = countersign.approve(receiver, args.id, signer, reason)
    else:
        result = countersign.reject(ctx.home, receiver, args.id, signer, reason)
    if ctx.json:
        print_json(result)
        return 0
    entry = result["entry"]
    out = make_console()
    decision = decisions.APPROVE if args.verb == "approve" else decisions.REJECT
    out.print(safe(decision.summary(result), 600), soft_wrap=True)
    if result.get("key_file_moved_to"):
        out.print(Text(f"the key file of the operator it would have added is kept at {result['key_file_moved_to']}"),
                  soft_wrap=True)
    out.print(Text(f"signed audit entry #{entry['seq']} by {entry['operator']}; head {entry['hash']}"), soft_wrap=True)
    return 0
