"""``report``: the situation report of a period as one self-contained HTML file or an A4 PDF."""

from __future__ import annotations

import time
from pathlib import Path

from rich.text import Text

from console.errors import CommandError
from console.render import make_console, print_json, safe
from core.report.period import parse_period

from .common import alert_targets, with_examples


def register(sub, common) -> None:
    p = sub.add_parser("report", parents=[common], help="the situation report of a period (HTML or PDF)",
                       **with_examples("ussd-console report", "ussd-console report --since 7d --format pdf",
                                       "ussd-console report --since 2026-12-01 --until 2026-12-02 --json"))
    p.add_argument("--since", default="24h", metavar="24h|7d|DATE",
                   help="the period's start: a span back from --until (24h, 7d) or a date (default 24h)")
    p.add_argument("--until", default=None, metavar="DATE", help="the period's end (a bare date: that whole day; "
                                                                  "default now)")
    p.add_argument("--site", default=None, metavar="SITE", help="one site's cases only")
    p.add_argument("--format", choices=("html", "pdf"), default=None,
                   help="html or pdf (default: from the --to name, else html)")
    p.add_argument("--to", metavar="FILE", default=None,
                   help="the file to write (default <home>/reports/report-<time>.<format>)")
    p.add_argument("--force", action="store_true", help="replace an existing --to FILE")
    p.set_defaults(handler=cmd_report)


def _format(to: str | None, given: str | None) -> str:
    if given:
        return given
    return "pdf" if to and to.lower().endswith(".pdf") else "html"


def _target(to: str, force: bool) -> Path:
    target = Path(to)
    if target.is_dir():
        raise CommandError(f"{target} is a folder; give a file name to write")
    if not target.parent.is_dir():
        raise CommandError(f"the folder {target.parent} does not exist; create it first")
    if target.is_symlink():
        raise CommandError(f"{target} is a symlink; refusing to write through it")
    if target.exists() and not force:
        raise CommandError(f"{target} already exists; use --force to replace it")
    return target


def cmd_report(args, ctx) -> int:
    from core.report.write import default_target, write_report

    now = time.time()
    try:
        period = parse_period(args.since, args.until, now, args.site)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    fmt = _format(args.to, args.format)
    receiver = ctx.receiver  # first: a missing home is an error before any reports folder is made
    target = _target(args.to, args.force) if args.to else default_target(ctx.home.root / "reports", fmt, now)
    done = write_report(ctx.home, receiver, period, fmt, target, alert_targets(ctx.home), now)
    if ctx.json:
        print_json({"file": str(done.file), "format": done.format, "cases": done.cases, "people": done.people})
    else:
        make_console().print(Text.assemble(f"report of {done.cases:,} cases, {done.people:,} people written to ",
                                           safe(str(done.file), 1000)), soft_wrap=True)
    return 0
