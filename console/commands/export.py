"""``export VIEW``: any view as CSV or .xlsx, for planning deliveries and reporting to donors."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rich.text import Text

from console.export_views import VIEWS
from console.exports import FORMATS, default_target, fmt_for, write_csv, write_export
from console.errors import CommandError, stdout_closed
from console.render import make_console, print_json
from core.i18n import _, ngettext, number

from .common import with_examples


def register(sub, common) -> None:
    p = sub.add_parser("export", parents=[common], help=_("write a view as CSV or .xlsx (%(views)s)",
                                                          views=", ".join(VIEWS)),
                       **with_examples("ussd-console export ranking", "ussd-console export cases --out cases.xlsx",
                                       "ussd-console export rejects --out - | head", "ussd-console export cases --hxl --out cases-hxl.csv"))
    p.add_argument("view", metavar="VIEW", choices=list(VIEWS), help=", ".join(VIEWS))
    p.add_argument("--format", choices=FORMATS, default=None,
                   help=_("csv or xlsx (default: from the --out name, else csv)"))
    p.add_argument("--out", metavar="PATH", default=None,
                   help=_("the file to write (default <home>/exports/<view>-<time>.<format>; - for CSV on stdout)"))
    p.add_argument("--force", action="store_true", help=_("replace an existing file"))
    p.add_argument("--hxl", action="store_true",
                   help=_("add the HXL hashtag row under the header (#meta+id, #loc, #sector, #affected, #date ...)"))
    p.set_defaults(handler=cmd_export)


def cmd_export(args, ctx) -> int:
    fmt = fmt_for(args.out, args.format)
    if args.out == "-":
        if fmt != "csv":
            raise CommandError.told(_("only CSV can go to stdout; give --out PATH for .xlsx"))
        try:
            write_csv(ctx.receiver, args.view, sys.stdout, hxl=args.hxl)
            sys.stdout.flush()
        except BrokenPipeError:  # `| head` closed the pipe: the reader has what it wanted
            stdout_closed()
        return 0
    receiver = ctx.receiver
    target = Path(args.out) if args.out else default_target(ctx.home.exports, args.view, fmt, time.time())
    rows = write_export(receiver, args.view, target, fmt, force=args.force, hxl=args.hxl)
    if ctx.json:
        print_json({"view": args.view, "format": fmt, "path": str(target), "rows": rows})
    else:
        make_console().print(Text(ngettext("%(view)s: %(n)s row written to %(path)s",
                                           "%(view)s: %(n)s rows written to %(path)s", rows, view=args.view,
                                           n=number(rows), path=target)), soft_wrap=True)
    return 0
