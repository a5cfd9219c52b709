"""The applied ledger: ``cases`` (one page of it) and ``ranking`` (the dispatch order, or its CSV)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rich.text import Text

from console.exports import default_target, write_csv, write_export
from console.errors import stdout_closed
from console.render import make_console, print_json, table
from core.i18n import _, ngettext, number

from .common import add_paging, date_arg, date_arg_end, examples, minute, need_words, status_words, window


def register(sub, common) -> None:
    p = sub.add_parser(
        "cases", parents=[common], help=_("the applied ledger, one page"),
        epilog=examples("ussd-console cases --filter water", "ussd-console cases --since 2025-05-01 --until 2025-05-07",
                        "ussd-console cases --sort headcount --limit 20"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_paging(p)
    p.add_argument("--sort", default="first_seen", help=_("one of: %(kinds)s",
                                                          kinds="first_seen, frame_id, site, need, headcount, pri"))
    p.add_argument("--asc", action="store_true", help=_("ascending (default newest or largest first)"))
    p.add_argument("--filter", default=None, metavar="TEXT",
                   help=_("text to find in the site, the need (code or name: water finds WAT) or the frame id"))
    p.add_argument("--since", type=date_arg, metavar="DATE",
                   help=_("first seen on or after DATE (YYYY-MM-DD[ HH:MM])"))
    p.add_argument("--until", type=date_arg_end, metavar="DATE",
                   help=_("first seen on or before DATE (that whole day)"))
    p.set_defaults(handler=cmd_cases)

    p = sub.add_parser("ranking", parents=[common],
                       help=_("dispatch order of open and dispatched cases: priority, then people, then first seen"),
                       epilog=examples("ussd-console ranking --limit 20", "ussd-console ranking --all",
                                       "ussd-console ranking --csv", "ussd-console ranking --csv - | head"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_paging(p)
    p.add_argument("--all", action="store_true", help=_("served and closed cases too"))
    p.add_argument("--csv", nargs="?", const="", default=None, metavar="PATH",
                   help=_("write the whole dispatch list as CSV (default <home>/exports/dispatch-<time>.csv; - for "
                          "stdout)"))
    p.add_argument("--force", action="store_true", help=_("with --csv PATH: replace an existing file"))
    p.set_defaults(handler=cmd_ranking)


def cmd_cases(args, ctx) -> int:
    r = ctx.receiver
    rows = r.cases(limit=args.limit, offset=args.offset, sort=args.sort, descending=not args.asc, filter=args.filter,
                   since=args.since, until=args.until)
    if ctx.json:
        for row in rows:
            print_json(row.to_dict())
        return 0
    total = r.count_cases(args.filter, since=args.since, until=args.until)
    # TRANSLATORS: the column of frame ids (a frame's own reference, as the field worker typed it)
    frame_id, site, need, people, pri = _("frame_id"), _("site"), _("need"), _("people"), _("pri")
    first_seen, version, status = _("first seen"), _("version"), _("status")
    make_console().print(table(
        window(_("Cases"), args.offset, len(rows), total),
        [frame_id, site, need, people, pri, first_seen, version, status],
        [(c.frame_id, c.site, need_words(c.need), Text(number(c.headcount)), c.pri,
          minute(c.first_seen), c.version, status_words(c.status, c.disputed)) for c in rows],
        codes=(frame_id, site, people, pri, version, status),
        drop=(version, first_seen, pri),  # never the need, the people or the status
    ))
    return 0


def cmd_ranking(args, ctx) -> int:
    if args.csv is not None:
        return _ranking_csv(args, ctx)
    rows = ctx.receiver.ranking(limit=args.limit, offset=args.offset, include_done=args.all)
    if ctx.json:
        for row in rows:
            print_json(row.to_dict())
        return 0
    rank, frame_id, site, need, people, pri = _("rank"), _("frame_id"), _("site"), _("need"), _("people"), _("pri")
    status, first_seen = _("status"), _("first seen")
    make_console().print(table(
        window(_("Dispatch ranking (every case)") if args.all else _("Dispatch ranking (open and dispatched cases)"),
               args.offset, len(rows), ctx.receiver.count_ranked(include_done=args.all)),
        [rank, frame_id, site, need, people, pri, status, first_seen],
        [(c.rank, c.frame_id, c.site, need_words(c.need), Text(number(c.headcount)), c.pri,
          status_words(c.status, c.disputed), minute(c.first_seen)) for c in rows],
        codes=(rank, frame_id, site, people, pri, status),
        drop=(first_seen,),
    ))
    return 0


def _ranking_csv(args, ctx) -> int:
    receiver = ctx.receiver  # first: a missing home is an error before any exports folder is made
    if args.csv == "-":
        try:
            write_csv(receiver, "ranking", sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:  # `| head` closed the pipe: the reader has what it wanted
            stdout_closed()
        return 0
    target = Path(args.csv) if args.csv else default_target(ctx.home.exports, "ranking", "csv", time.time())
    rows = write_export(receiver, "ranking", target, "csv", force=args.force)
    if ctx.json:
        print_json({"path": str(target), "cases": rows})
    else:
        make_console().print(Text(ngettext("%(n)s case in dispatch order written to %(path)s",
                                           "%(n)s cases in dispatch order written to %(path)s", rows, n=number(rows),
                                           path=target)), soft_wrap=True)
    return 0
