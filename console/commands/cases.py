"""A case's lifecycle: ``case mark`` (signed) and ``case show`` (its whole history)."""

from __future__ import annotations

from rich.text import Text

from console.render import assembled, make_console, print_json, safe, table, when
from core.i18n import _, ngettext, number
from core.rules.explain import reason_words
from core.rules.lifecycle import STATUSES
from core.rules.words import resolution_words
from core.signing import marks
from core.signing.case_story import case_story

from .common import CASE_STATUS_WORDS, table_or_none, with_examples
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
    q.add_argument("frame_id", metavar="FRAME_ID", help=_("the frame id of any version of the case"))
    q.add_argument("status", metavar="STATUS", help=_("%(statuses)s (open re-opens)", statuses=", ".join(STATUSES)))
    q.set_defaults(handler=cmd_case_mark)
    q = acts.add_parser("show", parents=[common], help=_("current values, status, versions, marks, open conflicts"),
                        **with_examples("ussd-console case show kak01-1", "ussd-console case show kak01-2 --json"))
    q.add_argument("frame_id", metavar="FRAME_ID", help=_("the frame id of any version of the case"))
    q.set_defaults(handler=cmd_case_show)


def cmd_case_mark(args, ctx) -> int:
    return run_signed(ctx, args, marks.MARK, {"frame_id": args.frame_id, "status": args.status})


def _values(v: dict) -> Text:
    """Site, need, people and pri in words."""
    return assembled(_("%(site)s %(need)s, %(people)s, pri %(pri)s"), site=safe(v["site"]), need=safe(v["need"]),
                     pri=v["pri"], people=ngettext("%(n)s person", "%(n)s people", v["headcount"],
                                                   n=number(v["headcount"])))


def cmd_case_show(args, ctx) -> int:
    story = case_story(ctx.receiver, frame_id=args.frame_id)
    if ctx.json:
        print_json(story)
        return 0
    case = story["case"]
    out = make_console()
    status = _(CASE_STATUS_WORDS[case["status"]]) if case["status"] in CASE_STATUS_WORDS else case["status"]
    head = assembled(_("case %(frame_id)s: %(status)s"), frame_id=safe(case["frame_id"]), status=Text(status, style="bold"))
    if case["disputed"]:
        head.append(" " + _("! DISPUTED (an open conflict concerns it)"), style="bold reverse")
    out.print(head)  # wrapped at words, as the tables are
    out.print(assembled(_("now: %(values)s; version %(version)s; %(frame)s"), values=_values(case),
                        version=case["version"], frame=safe(case["frame_text"])))
    v_, frame_id, people, pri, when_, entry = _("v"), _("frame_id"), _("people"), _("pri"), _("when"), _("audit entry")
    out.print(table(_("Versions"), [v_, frame_id, people, pri, when_, _("how")], [
        (v["version"], v["frame_id"], Text(number(v["headcount"])), v["pri"], when(v["at"]), _how(v))
        for v in story["versions"]
    ], codes=(v_, frame_id, people, pri, when_), drop=(pri,)))
    from_, to, by = _("from"), _("to"), _("by")
    out.print(table_or_none(_("Status marks"), [when_, from_, to, by, _("reason"), entry], [
        (when(mk["at"]), mk["from"], mk["to"], mk["by"], mk["reason"], mk["audit_seq"]) for mk in story["marks"]
    ], none=_("none (open since it arrived)"), codes=(when_, from_, to, by), drop=(entry,)))
    id_, new = _("id"), _("new version")
    out.print(table_or_none(_("Open conflicts"), [id_, frame_id, new, _("reason")], [
        (q["id"], q["frame_id"], q["frame_text"], reason_words(q["reason"])) for q in story["open_conflicts"]
    ], codes=(id_, frame_id, new)))
    kept = _("version kept")
    out.print(table_or_none(_("Resolved conflicts"), [id_, _("decision"), kept, _("by, when"), entry], [
        (q["id"], resolution_words(q["status"]), q["kept_text"] or "-", f"{q['by'] or '-'}, {when(q['at'])}",
         _entry_words(q)) for q in story["resolved_conflicts"]
    ], codes=(id_, kept), drop=(entry,)))
    return 0


def _how(v: dict) -> Text:
    """How a version came: applied by its path, or a correction someone accepted (their words as outside text)."""
    if v["how"] == "applied":
        return assembled(_("applied (via %(path)s)"), path=safe(v["path"]))
    return assembled(_("correction #%(id)s accepted by %(operator)s: %(reason)s"), id=v["quarantine_id"],
                     operator=safe(v.get("by") or "-"), reason=safe(v.get("reason") or "-"))


def _entry_words(q: dict) -> str:
    """The signed entry that decided a conflict, and with which conflict when it was settled by another's."""
    if q["audit_seq"] is None:
        return "-"
    if q["decided_with"] not in (None, q["id"]):
        return assembled(_("#%(seq)s (deciding #%(other)s): %(reason)s"), seq=q["audit_seq"], other=q["decided_with"],
                         reason=safe(q["audit_reason"] or "-"))
    return assembled("#%(seq)s: %(reason)s", seq=q["audit_seq"], reason=safe(q["audit_reason"] or "-"))
