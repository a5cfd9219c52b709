"""A case's lifecycle: ``case mark`` (signed) and ``case show`` (its whole history)."""

from __future__ import annotations

from rich.text import Text

from console.render import make_console, print_json, safe, table, when
from core.i18n import _
from core.rules.explain import reason_words
from core.rules.lifecycle import STATUSES
from core.rules.words import resolution_words
from core.signing import marks
from core.signing.case_story import case_story

from .common import table_or_none, with_examples
from .signing import run_signed, signing_parser


def register(sub, common) -> None:
    signing = signing_parser()
    p = sub.add_parser("case", parents=[common], help=_("one case: its history, and marking it dispatched, served..."),
                       **with_examples("ussd-console case show kak01-1",
                                       'ussd-console case mark kak02-2 dispatched --operator alice --reason "clinic team sent"'))
    acts = p.add_subparsers(dest="case_command", metavar="ACTION", required=True)
    q = acts.add_parser("mark", parents=[common, signing],
                        help=_("mark a case open, dispatched, served or closed (signed)"),
                        **with_examples('ussd-console case mark kak01-1 dispatched --operator alice --reason "team sent"',
                                        'ussd-console case mark kak01-1 served --operator alice --reason "kits handed over"',
                                        'ussd-console case mark kak01-1 open --operator alice --reason "marked by mistake"'))
    q.add_argument("frame_id", metavar="FRAME_ID", help="the frame id of any version of the case")
    q.add_argument("status", metavar="STATUS", help=", ".join(STATUSES) + " (open re-opens)")
    q.set_defaults(handler=cmd_case_mark)
    q = acts.add_parser("show", parents=[common], help=_("current values, status, versions, marks, open conflicts"),
                        **with_examples("ussd-console case show kak01-1", "ussd-console case show kak01-2 --json"))
    q.add_argument("frame_id", metavar="FRAME_ID", help="the frame id of any version of the case")
    q.set_defaults(handler=cmd_case_show)


def cmd_case_mark(args, ctx) -> int:
    return run_signed(ctx, args, marks.MARK, {"frame_id": args.frame_id, "status": args.status})


def _values(v: dict) -> str:
    """Site, need, people and pri in words."""
    return f"{v['site']} {v['need']}, {v['headcount']} people, pri {v['pri']}"


def cmd_case_show(args, ctx) -> int:
    story = case_story(ctx.receiver, frame_id=args.frame_id)
    if ctx.json:
        print_json(story)
        return 0
    case = story["case"]
    out = make_console()
    head = Text(f"case {case['frame_id']}: ")
    head.append(case["status"], style="bold")
    if case["disputed"]:
        head.append(" ! DISPUTED (an open conflict concerns it)", style="bold reverse")
    out.print(head)  # wrapped at words, as the tables are
    out.print(Text(f"now: {_values(case)}; version {case['version']}; ") + safe(case["frame_text"]))
    out.print(table("Versions", ["v", "frame_id", "people", "pri", "when", "how"], [
        (v["version"], v["frame_id"], v["headcount"], v["pri"], when(v["at"]),
         f"applied (via {v['path']})" if v["how"] == "applied" else
         f"correction #{v['quarantine_id']} accepted by {v.get('by') or '-'}: {v.get('reason') or '-'}")
        for v in story["versions"]
    ], codes=("v", "frame_id", "people", "pri", "when"), drop=("pri",)))
    out.print(table_or_none("Status marks", ["when", "from", "to", "by", "reason", "audit entry"], [
        (when(mk["at"]), mk["from"], mk["to"], mk["by"], mk["reason"], mk["audit_seq"]) for mk in story["marks"]
    ], none="none (open since it arrived)", codes=("when", "from", "to", "by"), drop=("audit entry",)))
    out.print(table_or_none("Open conflicts", ["id", "frame_id", "new version", "reason"], [
        (q["id"], q["frame_id"], q["frame_text"], reason_words(q["reason"])) for q in story["open_conflicts"]
    ], codes=("id", "frame_id", "new version")))
    out.print(table_or_none("Resolved conflicts", ["id", "decision", "version kept", "by, when", "audit entry"], [
        (q["id"], resolution_words(q["status"]), q["kept_text"] or "-", f"{q['by'] or '-'}, {when(q['at'])}",
         _entry_words(q)) for q in story["resolved_conflicts"]
    ], codes=("id", "version kept"), drop=("audit entry",)))
    return 0


def _entry_words(q: dict) -> str:
    """The signed entry that decided a conflict, and with which conflict when it was settled by another's."""
    if q["audit_seq"] is None:
        return "-"
    also = f" (deciding #{q['decided_with']})" if q["decided_with"] not in (None, q["id"]) else ""
    return f"#{q['audit_seq']}{also}: {q['audit_reason'] or '-'}"
