"""``ussd-console pending``, ``approve ID`` and ``reject ID``: the second pair of eyes.

With ``[signing] countersign`` in ``config.toml``, an admin's signed retention,
gateway or operator change is held as a request (docs/roles.md). Another
admin approves it (the action applies with the approval, bound to the
request's hash) or any admin rejects it; the requester cannot approve their own.
"""

from __future__ import annotations

from rich.text import Text

from console import signed_actions
from console.render import make_console, print_json, safe, table
from core.i18n import _
from core.signing import countersign

from .common import minute, with_examples
from .signing import entry_words, run_signed, signing_parser


def register(sub, common) -> None:
    signing = signing_parser()
    p = sub.add_parser("pending", parents=[common],
                       help=_("signed requests waiting for a second admin ([signing] countersign)"),
                       **with_examples("ussd-console pending", "ussd-console pending --json"))
    p.set_defaults(handler=cmd_pending)
    for verb, text in (("approve", _("approve a waiting request as a second admin (signed); its action applies")),
                       ("reject", _("reject a waiting request (signed by an admin); nothing applies"))):
        p = sub.add_parser(verb, parents=[common, signing], help=text,
                           **with_examples(f"ussd-console {verb} 42 --operator bob --reason 'checked with the field office'",
                                           f"ussd-console {verb} 42 --operator bob --reason 'checked' "
                                           "--passphrase-file /run/keys/bob.pass"))
        p.add_argument("id", metavar="ID", help=_("the request's id: the id column of %(command)s", command="`ussd-console pending`"))
        p.set_defaults(handler=cmd_decide, verb=verb, writes=True)


def cmd_pending(args, ctx) -> int:
    rows = countersign.pending(ctx.receiver, signed_actions.BY_ID)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    out = make_console()
    if not rows:
        out.print(Text(_("nothing waits for a second admin")))
        return 0
    id_, by, expires, status = _("id"), _("by"), _("expires"), _("status")
    held = countersign.requests(ctx.receiver)  # each request's words in the language; --json keeps ``what``
    out.print(table(
        _("Waiting for a second admin"), [id_, _("what"), by, expires, status],
        [(r["id"], countersign.said(held[r["id"]], signed_actions.BY_ID[r["action"]]), r["requested_by"],
          minute(r["expires_at"]), r["status"]) for r in rows],
        codes=(id_, by, expires, status),
    ))
    out.print(Text(_("approve with %(approve)s, reject with %(reject)s (--json shows each request's reason)",
                     approve="`ussd-console approve ID`", reject="`ussd-console reject ID`")), soft_wrap=True)
    return 0


def cmd_decide(args, ctx) -> int:
    decision = signed_actions.APPROVE if args.verb == "approve" else signed_actions.REJECT
    return run_signed(ctx, args, decision, {"request_id": args.id}, done=lambda result: _decided(ctx, result))


def _decided(ctx, result: dict) -> int:
    """The decision as it has always printed: its request first, then the entry (and a rejected
    operator's key file, set aside)."""
    key = "approved" if "approved" in result else "rejected"
    head = {k: result[k] for k in (key, "action", "what", "requested_by")}
    out = {**head, "entry": result["entry"], **{k: v for k, v in result.items() if k not in head and k != "entry"}}
    if key == "rejected":
        out["key_file_moved_to"] = countersign.set_aside(ctx.home, countersign.requests(ctx.receiver)[result[key]])
    if ctx.json:
        print_json(out)
        return 0
    action, entry, console = signed_actions.BY_ID[result["entry"]["action"]], out["entry"], make_console()
    console.print(safe(action.summary(out), 600), soft_wrap=True)
    if out.get("key_file_moved_to"):
        console.print(Text(_("the key file of the operator it would have added is kept at %(path)s",
                             path=out["key_file_moved_to"])), soft_wrap=True)
    console.print(Text(entry_words(entry)), soft_wrap=True)
    return 0
