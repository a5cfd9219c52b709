"""The signed audit log: audit verify/show/checkpoint.

`verify` checks the chain, then reconciles the tables with it and names each
row that differs; with ``--checkpoint`` it also proves the log still extends a
checkpoint kept outside the machine. A checkpoint or head that cannot be read
(a typo) is a usage error (exit 2), never a tamper verdict (exit 1).
"""

from __future__ import annotations

from rich.text import Text

from core.i18n import _, ngettext, number
from core.rules.text import in_language
from core.signing import audit
from core.signing import checkpoint as checkpoint_

from ..render import assembled, make_console, print_json, safe, table, when
from .common import add_paging, with_examples

EXIT_BAD_LOG = 1


def register(sub, common) -> None:
    p = sub.add_parser("audit", parents=[common], help=_("the signed audit log"),
                       **with_examples("ussd-console audit verify", "ussd-console audit show --limit 20",
                                       "ussd-console audit checkpoint > checkpoint.txt"))
    aud = p.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    q = aud.add_parser("verify", parents=[common],
                       help=_("check every signature and the hash chain, and the tables against the log"),
                       **with_examples("ussd-console audit verify", "ussd-console audit verify --checkpoint checkpoint.txt",
                                       "ussd-console audit verify --checkpoint - < checkpoint.txt"))
    q.add_argument("--head", metavar="HASH", help=_("a head hash written down earlier; it must still be in the log"))
    q.add_argument("--checkpoint", metavar="FILE",
                   help=_("a checkpoint kept outside (%(command)s); - for stdin", command="`audit checkpoint`"))
    q.set_defaults(handler=cmd_audit_verify)
    q = aud.add_parser("show", parents=[common], help=_("the log, newest first"),
                       **with_examples("ussd-console audit show", "ussd-console audit show --limit 500 --json"))
    add_paging(q, offset=False)
    q.set_defaults(handler=cmd_audit_show)
    q = aud.add_parser("checkpoint", parents=[common],
                       help=_("a short record of the log to keep outside the machine (paper, a message)"),
                       **with_examples("ussd-console audit checkpoint",
                                       "ussd-console audit checkpoint > /media/usb/checkpoint-$(date +%F).txt"))
    q.set_defaults(handler=cmd_audit_checkpoint)


def print_retention_fault(policy: dict) -> None:
    """A policy row set aside (below the floor, unsigned) is said on stderr, where scripts look too."""
    fault = policy.get("fault")
    if fault:  # its English is the data (status --json, the log); printed in the operator's language
        make_console(stderr=True).print(Text(_("RETENTION FAULT: "), style="bold red") + safe(in_language(fault), 600),
                                        soft_wrap=True)


def _print_verdict(result, head) -> None:
    out = make_console()
    n = number(result.count)
    if result.ok:
        out.print(Text(ngettext("audit log OK: %(n)s entry verified; head %(hash)s",
                                "audit log OK: %(n)s entries verified; head %(hash)s", result.count, n=n,
                                hash=head.hash)), soft_wrap=True)
    elif result.rows:
        out.print(_bad(ngettext("audit log BAD: %(n)s entry verified, but %(why)s",
                                "audit log BAD: %(n)s entries verified, but %(why)s", result.count, n=n,
                                why="%(why)s"), result.why), soft_wrap=True)
        for row in result.rows:
            out.print(Text("  ") + safe(row, 400), soft_wrap=True)
    else:
        out.print(_bad(ngettext("audit log BAD at entry #%(seq)s: %(why)s (%(n)s entry verified before it)",
                                "audit log BAD at entry #%(seq)s: %(why)s (%(n)s entries verified before it)",
                                result.count, seq=result.first_bad_seq, n=n, why="%(why)s"), result.why), soft_wrap=True)


def _bad(template: str, why: str) -> Text:
    """A verdict against the log, in bold red, its reason (words of the log's rows) as outside text."""
    line = assembled(template, why=safe(in_language(why)))  # its English is the data (--json, backups)
    line.stylize("bold red")
    return line


def cmd_audit_verify(args, ctx) -> int:
    cp = checkpoint_.read(args.checkpoint) if args.checkpoint else None
    receiver = ctx.receiver
    result = audit.verify(receiver, expect_head=args.head, checkpoint=cp)
    head = audit.head(receiver)
    if ctx.json:
        print_json({**result._asdict(), "rows": list(result.rows), "head": head.hash, "head_count": head.count})
    else:
        _print_verdict(result, head)
    return 0 if result.ok else EXIT_BAD_LOG


def cmd_audit_checkpoint(args, ctx) -> int:
    result, cp = audit.make_checkpoint(ctx.receiver)
    if cp is None:
        if ctx.json:
            print_json({**result._asdict(), "rows": list(result.rows)})
        else:
            _print_verdict(result, audit.head(ctx.receiver))
            make_console(stderr=True).print(Text(_("no checkpoint taken: the log does not verify")))
        return EXIT_BAD_LOG
    if ctx.json:
        print_json(cp.as_json())
        return 0
    out = make_console()
    out.print(Text(cp.line()), soft_wrap=True)
    out.print(Text("# " + ngettext("%(n)s entry; keep this line outside this machine (paper, a message). Later: %(command)s",
                                   "%(n)s entries; keep this line outside this machine (paper, a message). Later: "
                                   "%(command)s", cp.count, n=number(cp.count),
                                   command="ussd-console audit verify --checkpoint FILE"), style="dim"), soft_wrap=True)
    return 0


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
    time_, operator, action = _("time"), _("operator"), _("action and target")
    out.print(table(
        ngettext("Audit log (%(n)s entry, newest first)", "Audit log (%(n)s entries, newest first)", head.count,
                 n=number(head.count)),
        ["#", time_, operator, action, _("reason")],
        [(r["seq"], _when(r["at"])[:16], r["operator"], Text("\n").join([safe(r["action"]), safe(r["target"])]),
          r["reason"]) for r in rows],
        codes=("#", time_, operator, action),
    ))
    out.print(Text(_("head %(hash)s", hash=head.hash)), soft_wrap=True)
    return 0
