"""The report's charts, drawn by matplotlib on its Agg-free SVG and PDF backends: no display, no
browser, no font fetched (SVG text is drawn as paths). Grey print loses nothing: bars are dark
grey-blue with black edges, and the statuses differ by hatch and by lightness, not by hue alone.
"""

from __future__ import annotations

import datetime as dt
import io

import matplotlib

matplotlib.use("svg")  # before pyplot is ever imported anywhere: no GUI backend is looked for

from matplotlib.figure import Figure  # noqa: E402 - after the backend is chosen
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

from core.i18n import _, number  # noqa: E402

from . import labels  # noqa: E402
from .model import Figures  # noqa: E402

INK = "#1f3b57"  # dark: prints as near black
EDGE = "#000000"
# Status bars: lightness falls with the status, and each has its own hatch.
STATUS_STYLE = {"open": ("#f2f2f2", "//"), "dispatched": ("#b0b0b0", ".."), "served": ("#5a5a5a", ""),
                "closed": ("#1a1a1a", "")}
matplotlib.rcParams.update({"svg.fonttype": "path", "svg.hashsalt": "ussd-report", "font.size": 8,
                            "hatch.color": "#000000", "axes.spines.top": False, "axes.spines.right": False})


def _counts(axis) -> None:
    """Whole numbers with thousands separators (never 1e6 above the axis)."""
    axis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: number(int(round(v)))))


def _hour_label(ts: float, bucket: int) -> str:
    when = dt.datetime.fromtimestamp(ts)
    return when.strftime("%d %b") if bucket >= 86400 else when.strftime("%d %b\n%H:00")


def arrivals(ax, f: Figures) -> None:
    xs = list(range(len(f.arrivals)))
    ax.bar(xs, [n for _, n in f.arrivals], width=0.9, color=INK, edgecolor=EDGE, linewidth=0.3)
    step = max(1, -(-len(xs) // 5))
    ax.set_xticks(xs[::step], [_hour_label(t, f.bucket_seconds) for t, _ in f.arrivals][::step], fontsize=7)
    _counts(ax.yaxis)
    ax.set_ylabel(_("new cases per day") if f.bucket_seconds >= 86400 else _("new cases per hour"))


def people_by_need(ax, f: Figures) -> None:
    rows = list(reversed(f.by_need))
    ax.barh([labels.need(c.key, c.label) for c in rows], [c.people for c in rows], color=INK, edgecolor=EDGE,
            linewidth=0.5)
    for y, c in enumerate(rows):
        ax.text(c.people, y, " " + number(c.people), va="center", fontsize=7)
    _counts(ax.xaxis)
    ax.set_xlabel(_("people"))


def cases_by_status(ax, f: Figures) -> None:
    for x, c in enumerate(f.by_status):
        colour, hatch = STATUS_STYLE.get(c.key, ("#808080", "xx"))
        ax.bar(x, c.cases, color=colour, hatch=hatch, edgecolor=EDGE, linewidth=0.8)
        ax.text(x, c.cases, number(c.cases), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(f.by_status)), [labels.status(c.key) for c in f.by_status])
    _counts(ax.yaxis)
    ax.set_ylabel(_("cases"))


CHARTS = {"arrivals": arrivals, "people_by_need": people_by_need, "cases_by_status": cases_by_status}


# No chart draws a title: the heading above it (HTML) or beside it (PDF) names it.
def svg(name: str, f: Figures, size: tuple[float, float] = (5.2, 2.4)) -> str:
    """One chart as an inline ``<svg>`` element (its XML prologue and DOCTYPE left out)."""
    fig = Figure(figsize=size, layout="constrained")
    CHARTS[name](fig.add_subplot(), f)
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    text = out.getvalue()
    return text[text.index("<svg"):]
