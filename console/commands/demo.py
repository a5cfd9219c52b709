"""``ussd-console demo``: the sample sessions ingested into a throwaway home, start to finish."""

from __future__ import annotations

import tempfile
from pathlib import Path

from rich.text import Text

from core import Receiver
from core.formats import plain_lines

from ..render import make_console, table, when

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"


def register(sub, common) -> None:
    p = sub.add_parser("demo", parents=[common], help="ingest the sample sessions into a throwaway home")
    p.add_argument("--samples", default=str(SAMPLES), help="folder of sample files (default data/samples)")
    p.set_defaults(handler=cmd_demo)


def cmd_demo(args, ctx) -> int:
    out = make_console()
    samples = sorted(Path(args.samples).glob("*.txt"))
    with tempfile.TemporaryDirectory(prefix="ussd-demo-") as home:
        with Receiver(str(Path(home) / "receiver.db")) as r:
            for path in samples:
                text = path.read_text(encoding="utf-8")
                comment = next((l[1:].strip() for l in text.splitlines() if l.startswith("#")), "")
                items = [(fid, frame, path.name, line) for fid, frame, line in plain_lines(text)]
                verdicts = r.ingest_many(items, source="demo")
                out.rule(Text(f"{path.name}: {comment}"))
                out.print(table("", ["line", "frame_id", "outcome", "reason"],
                                [(v.line, v.frame_id, v.outcome.value, v.reason) for v in verdicts]))
            t = r.totals()
            out.rule(Text("Ledger"))
            out.print(table("Dispatch ranking", ["rank", "frame_id", "site", "need", "headcount", "pri", "first seen"],
                            [(c["rank"], c["frame_id"], c["site"], c["need"], c["headcount"], c["pri"],
                              when(c["first_seen"])) for c in r.ranking(limit=20)]))
            out.print(Text(
                f"{t['cases']} cases, {t['headcount_total']} people applied once; "
                f"{t['duplicates']} re-sent frames dropped as duplicates; "
                f"{t['conflicts_open']} conflict waiting in quarantine; {t['rejects']} rejects."
            ))
    return 0
