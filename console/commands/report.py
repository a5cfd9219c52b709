"""``report``: the situation report of a period as one self-contained HTML file or an A4 PDF."""

from __future__ import annotations

import time
from pathlib import Path


from console.errors import CommandError
from console.render import assembled, make_console, print_json, safe
from core.i18n import _, ngettext, number
from core.rules.text import said
from core.report.period import parse_period

from .common import alert_targets, with_examples


def register(sub, common) -> None:
    p = sub.add_parser("report", parents=[common], help=_("the situation report of a period (HTML or PDF)"),
                       **with_examples("ussd-console report", "ussd-console report --since 7d --format pdf",
                                       "ussd-console report --since 2026-12-01 --until 2026-12-02 --json",
                                       "ussd-console report --since 7d --format csv --hxl"))
    p.add_argument("--since", default="24h", metavar="24h|7d|DATE",
                   help=_("the period's start: a span back from --until (24h, 7d) or a date (default 24h)"))
    p.add_argument("--until", default=None, metavar="DATE",
                   help=_("the period's end (a bare date: that whole day; default now)"))
    p.add_argument("--site", default=None, metavar="SITE", help=_("one site's cases only"))
    p.add_argument("--format", choices=("html", "pdf", "csv", "xlsx"), default=None,
                   help=_("html or pdf; csv (a folder, one file per table) or xlsx (a sheet per table) for the "
                          "report's tables (default: from the --to name, else html)"))
    p.add_argument("--to", metavar="FILE", default=None,
                   help=_("the file (for csv, the new folder) to write (default "
                          "<home>/reports/report-<time>.<format>)"))
    p.add_argument("--force", action="store_true", help=_("replace an existing --to FILE"))
    p.add_argument("--hxl", action="store_true",
                   help=_("with csv or xlsx: the HXL hashtag row under each table's header (#sector, #loc, "
                          "#affected, #meta+count, #date ...)"))
    p.set_defaults(handler=cmd_report)


def _format(to: str | None, given: str | None) -> str:
    if given:
        return given
    for fmt in ("pdf", "xlsx"):
        if to and to.lower().endswith("." + fmt):
            return fmt
    return "html"


def _target(to: str, force: bool) -> Path:
    """The page's file: refused as every export's is (a folder, no such folder, a symlink, taken)."""
    from console.exports import check_target

    return check_target(Path(to), force)


def _write_tables(args, ctx, receiver, period, fmt: str, now: float) -> Written:
    """The report's tables as a folder of CSVs or one workbook, from the figures the page shows."""
    from console.report_exports import check_tables_target, default_target as tables_target, write_tables
    from core.report.tables import data_tables
    from core.report.write import Written, figures_for

    target = check_tables_target(Path(args.to), fmt, args.force) if args.to else \
        tables_target(ctx.home.root / "reports", fmt, now)
    figures = figures_for(ctx.home, receiver, period, alert_targets(ctx.home), now)
    write_tables(data_tables(figures), target, fmt, force=args.force, hxl=args.hxl)
    return Written(target, fmt, figures.cases, figures.people, figures)


def cmd_report(args, ctx) -> int:
    from core.report.write import default_target, write_report

    now = time.time()
    try:
        period = parse_period(args.since, args.until, now, args.site)
    except ValueError as exc:
        raise CommandError.told(said(exc)) from None
    fmt = _format(args.to, args.format)
    if args.hxl and fmt not in ("csv", "xlsx"):
        raise CommandError.told(_("--hxl tags the report's tables: give --format csv or --format xlsx"))
    receiver = ctx.receiver  # first: a missing home is an error before any reports folder is made
    if fmt in ("csv", "xlsx"):
        done = _write_tables(args, ctx, receiver, period, fmt, now)
    else:
        target = _target(args.to, args.force) if args.to else default_target(ctx.home.root / "reports", fmt, now)
        done = write_report(ctx.home, receiver, period, fmt, target, alert_targets(ctx.home), now)
    if ctx.json:
        print_json({"file": str(done.file), "format": done.format, "cases": done.cases, "people": done.people})
    else:
        make_console().print(assembled(_("report of %(cases)s, %(people)s written to %(file)s"),
                                       cases=ngettext("%(n)s case", "%(n)s cases", done.cases, n=number(done.cases)),
                                       people=ngettext("%(n)s person", "%(n)s people", done.people,
                                                       n=number(done.people)),
                                       file=safe(str(done.file), 1000)), soft_wrap=True)
    return 0
