"""Writing one report file: its figures computed, rendered as HTML or PDF, and put in place whole
(a temporary name renamed, never through a planted link), so nobody opens half a report."""

from __future__ import annotations

import datetime as dt
import io
import time
from pathlib import Path
from typing import NamedTuple

from core.home import private_folder, replace_private, sync_folder
from core.i18n import N_

from .figures import compute
from .health import report_health
from .model import Figures
from .period import Period, ReportError

FORMATS = ("html", "pdf")


class Written(NamedTuple):
    file: Path
    format: str
    cases: int
    people: int
    figures: Figures


def default_target(folder: Path, fmt: str, now: float) -> Path:
    """``<folder>/report-<time>.<fmt>``, numbered when that name is taken; the folder made 0700."""
    private_folder(folder)
    stamp = dt.datetime.fromtimestamp(now).strftime("%Y%m%d-%H%M%S")
    target, n = folder / f"report-{stamp}.{fmt}", 2
    while target.exists():
        target, n = folder / f"report-{stamp}-{n}.{fmt}", n + 1
    return target


def render(f: Figures, fmt: str) -> bytes:
    if fmt == "html":
        from .html import render as html

        return html(f).encode("utf-8")
    from .pdf import write as pdf

    out = io.BytesIO()
    pdf(f, out)
    return out.getvalue()


def figures_for(home, receiver, period: Period, targets: list[str], now: float | None = None) -> Figures:
    now = time.time() if now is None else now
    return compute(receiver, period, str(home.root), report_health(home, receiver, targets), now)


def place(figures: Figures, fmt: str, target: Path) -> Written:
    """Render ``figures`` as ``fmt`` and put the file at ``target`` whole (its folder must exist)."""
    if fmt not in FORMATS:
        raise ReportError(N_("a report format is %(formats)s, not %(fmt)s"),
                          formats=" or ".join(FORMATS), fmt=repr(fmt))
    target = Path(target)
    replace_private(target, render(figures, fmt))
    sync_folder(target.parent)
    return Written(target, fmt, figures.cases, figures.people, figures)


def write_report(home, receiver, period: Period, fmt: str, target: Path, targets: list[str],
                 now: float | None = None) -> Written:
    """Compute, render and place one report at ``target``."""
    if fmt not in FORMATS:
        raise ReportError(N_("a report format is %(formats)s, not %(fmt)s"),
                          formats=" or ".join(FORMATS), fmt=repr(fmt))
    return place(figures_for(home, receiver, period, targets, now), fmt, target)
