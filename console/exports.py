"""The dispatch list as CSV for the teams who deliver (console key ``e``, ``ranking --csv``)."""

from __future__ import annotations

import csv
import datetime as dt
import os
import tempfile
from pathlib import Path
from typing import IO

from core.rules.frame import NEED_NAMES

HEADER = ["rank", "frame_id", "site", "need", "need_name", "headcount", "pri", "first_seen"]
_FORMULA_START = ("=", "+", "-", "@")


def _cell(value: str) -> str:
    """Spreadsheets run cells that start like a formula; a leading quote keeps them text."""
    return "'" + value if value.startswith(_FORMULA_START) else value


def export_path(exports: Path, now: float) -> Path:
    stamp = dt.datetime.fromtimestamp(now).strftime("%Y%m%d-%H%M%S")
    return exports / f"dispatch-{stamp}.csv"


def write_rows(receiver, out: IO[str]) -> int:
    """The dispatch order as CSV rows on ``out``; return the number of cases."""
    writer = csv.writer(out)
    writer.writerow(HEADER)
    rows = 0
    for rank, (frame_id, site, need, headcount, pri, first_seen) in enumerate(receiver.ranking_rows(), 1):
        writer.writerow([
            rank, _cell(frame_id), _cell(site), need, NEED_NAMES.get(need, ""), headcount, pri,
            dt.datetime.fromtimestamp(first_seen).astimezone().isoformat(timespec="seconds"),
        ])
        rows = rank
    return rows


def write_dispatch_csv(receiver, target: Path) -> int:
    """Write the whole ranking to ``target`` atomically; return the number of cases.

    Written to a temporary name in the same folder and renamed, so nobody ever
    picks up half a list.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".dispatch-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as out:
            rows = write_rows(receiver, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return rows
