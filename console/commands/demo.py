"""``ussd-console demo``: the console on a throwaway home, fed by a simulated gateway.

Over about a minute the gateway drops the sample sessions into the inbox with
the field's usual troubles, and every panel comes alive. ``--print`` (or no
terminal, as in CI) runs the same story at once through the same inbox and
prints each file's verdicts instead.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from rich.text import Text

from console.demo.gateway_sim import SAMPLES, STORY, GatewaySim, drop_session
from console.errors import CommandError
from console.render import make_console, table, when
from core.i18n import _, ngettext, number
from core import Receiver
from core.config import InboxConfig
from core.home import Home
from core.inbox import InboxService
from core.rules.explain import outcome_words, reason_words

from .common import with_examples
from .options import common_parser
from .ui import logs_to_file


def register(sub, common) -> None:
    # The console and the demo print no results: no --json.
    p = sub.add_parser("demo", parents=[common_parser(json=False)],
                       help=_("the console on a throwaway home fed by a simulated gateway (about a minute)"),
                       **with_examples("ussd-console demo", "ussd-console demo --pace 0.5 --keep",
                                       "ussd-console demo --print"))
    p.add_argument("--print", dest="printed", action="store_true",
                   help=_("no console: run the story at once and print what happened (the default without a "
                          "terminal)"))
    p.add_argument("--pace", type=float, default=1.0, metavar="X",
                   help=_("scale the gateway's delays (0.5 is twice as fast; default 1)"))
    p.add_argument("--keep", action="store_true", help=_("keep the throwaway home and say where it is"))
    p.add_argument("--samples", default=str(SAMPLES),
                   help=_("folder of sample files (default: the ones installed with the program)"))
    p.set_defaults(handler=cmd_demo)


def cmd_demo(args, ctx) -> int:
    samples = Path(args.samples)
    missing = [step.sample for step in STORY if not (samples / step.sample).is_file()]
    if missing:
        raise CommandError.told(_("sample files missing in %(path)s: %(files)s"), path=samples,
                                files=", ".join(missing))
    interactive = not args.printed and sys.stdin.isatty() and sys.stdout.isatty()
    root = Path(tempfile.mkdtemp(prefix="ussd-demo-"))
    home = Home(root).ensure()
    try:
        if interactive:
            return run_console(home, samples, args.pace)
        return print_story(home, samples)
    finally:
        if args.keep:
            print(_("the demo home is kept at %(path)s", path=root), file=sys.stderr)
        else:
            remove_demo_home(home)


def operator_exports(home: Home) -> list[Path]:
    """Every file the operator exported (CSV, .xlsx, any format), never an export's half-written temp file."""
    if not home.exports.is_dir():
        return []
    return sorted(p for p in home.exports.iterdir() if p.is_file() and not p.name.startswith("."))


def remove_demo_home(home: Home) -> None:
    """Remove the throwaway home, but never a file the operator exported: those stay, and we say where."""
    exports = operator_exports(home)
    if not exports:
        shutil.rmtree(home.root, ignore_errors=True)
        return
    for entry in home.root.iterdir():
        if entry != home.exports:
            shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
    for entry in home.exports.iterdir():
        if entry not in exports:  # a temp file an interrupted export left
            entry.unlink(missing_ok=True)
    names = ", ".join(p.name for p in exports[:3])
    if len(exports) > 3:
        names = _("%(names)s and %(n)s more", names=names, n=number(len(exports) - 3))
    print(ngettext("the demo home is removed; your %(n)s export is kept in %(path)s: %(names)s",
                   "the demo home is removed; your %(n)s exports are kept in %(path)s: %(names)s", len(exports),
                   n=number(len(exports)), path=home.exports, names=names), file=sys.stderr)


DEMO_OPERATOR = "demo"
DEMO_PASSPHRASE = "demo passphrase"  # a throwaway home's throwaway key, shown on screen on purpose


def run_console(home: Home, samples: Path, pace: float) -> int:
    from console.app import ConsoleApp
    from core.signing.operator_add import add_operator

    with Receiver(str(home.db)) as receiver:  # someone to sign with in the throwaway home
        add_operator(home, receiver, DEMO_OPERATOR, DEMO_PASSPHRASE)
    sim = GatewaySim(home.inbox, samples, pace=pace)
    app = ConsoleApp(home, companions=[sim], quit_note=_(
        "The demo home %(home)s is then removed. Every file you exported (CSV and .xlsx) is kept "
        "in %(exports)s; the path is printed after the console closes.", home=home.root, exports=home.exports))

    def on_step(number: int, step) -> None:
        app.notify(_(step.story), title=_("Gateway %(n)s/%(of)s: %(file)s", n=number, of=len(STORY), file=step.name),
                   timeout=7, markup=False)

    def on_done() -> None:
        app.notify(_("The gateway is done. To resolve the conflict: 3, then k or a; sign as %(operator)s, "
                     "passphrase '%(passphrase)s' (also in the README). d hides notes.",
                     operator=DEMO_OPERATOR, passphrase=DEMO_PASSPHRASE),
                   title=_("Demo"), timeout=15, markup=False)

    sim.on_step, sim.on_done = on_step, on_done
    app.notify(_("A simulated gateway will deliver the sample sessions over about a minute. "
                 "1-5 switch screens, ? lists every key, d hides notes."), title=_("Demo"), timeout=8, markup=False)
    with logs_to_file(home):
        app.run()
    return app.return_code or 0


def print_story(home: Home, samples: Path) -> int:
    """The same story through the same inbox, file by file, printed (for CI and scripts)."""
    out = make_console()
    results: list = []
    service = InboxService(home, config=InboxConfig(observer=False, sweep=False, settle_time=0.0),
                           on_verdicts=lambda verdicts, result: results.append((result, verdicts)))
    service.start()
    try:
        for index, step in enumerate(STORY, start=1):
            drop_session(home.inbox, samples / step.sample, step.name)
            results.clear()
            service.sweep_now()
            out.rule(Text(f"{index}/{len(STORY)} {step.name}"), align="left")
            out.print(Text(_(step.story)))
            rows = [(v.line, v.frame_id, outcome_words(v.outcome.value), reason_words(v.reason))
                    for _result, verdicts in results for v in verdicts]
            out.print(table("", [_("line"), _("frame_id"), _("outcome"), _("reason")], rows))
    finally:
        service.stop()
    with Receiver(str(home.db)) as receiver:
        t = receiver.totals()
        out.rule(Text(_("Ledger")), align="left")
        out.print(table(_("Dispatch ranking"), [_("rank"), _("frame_id"), _("site"), _("need"), _("headcount"), _("pri"),
                                                _("first seen")],
                        [(c.rank, c.frame_id, c.site, c.need, Text(number(c.headcount)), c.pri,
                          when(c.first_seen)) for c in receiver.ranking(limit=20)]))
        out.print(Text(_(
            "%(cases)s, %(people)s, each applied once; %(duplicates)s dropped as duplicates; %(conflicts)s waiting "
            "in quarantine; %(rejects)s.",
            cases=ngettext("%(n)s case", "%(n)s cases", t.cases, n=number(t.cases)),
            people=ngettext("%(n)s person", "%(n)s people", t.headcount_total, n=number(t.headcount_total)),
            duplicates=ngettext("%(n)s re-sent frame", "%(n)s re-sent frames", t.duplicates, n=number(t.duplicates)),
            conflicts=ngettext("%(n)s conflict", "%(n)s conflicts", t.conflicts_open, n=number(t.conflicts_open)),
            rejects=ngettext("%(n)s reject", "%(n)s rejects", t.rejects, n=number(t.rejects)))), soft_wrap=True)
    return 0
