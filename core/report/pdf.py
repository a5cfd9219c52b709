"""The report as a PDF on A4, written by matplotlib's own PDF backend (``PdfPages``): no browser
and no converter at run time. Sections flow down the pages; a chart has its table beside it."""

from __future__ import annotations

import textwrap

from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure

from core.i18n import _

from . import charts, labels
from .model import Figures
from .sections import Table, headline, tables, title_lines

A4 = (8.27, 11.69)  # inches
MARGIN = 0.6  # inches
LINE = 11 / 72  # inches a line of 8 pt text takes
CHART_H = 2.3  # inches
CHAR_W = 0.0625  # inches a character of 8 pt text takes, about


class Pages:
    """A cursor down A4 pages: ``need(h)`` starts a new page when ``h`` inches do not fit."""

    def __init__(self, pdf: PdfPages, footer: str):
        self.pdf, self.footer, self.fig, self.y, self.count = pdf, footer, None, 0.0, 0
        self.new()

    def new(self) -> None:
        self.close_page()
        self.fig = Figure(figsize=A4)
        self.count += 1
        self.y = A4[1] - MARGIN

    def close_page(self) -> None:
        if self.fig is not None:
            self.fig.text(MARGIN / A4[0], 0.35 / A4[1], _("Situation report, page %(n)s", n=self.count), fontsize=7)
            self.pdf.savefig(self.fig)
            self.fig = None

    def need(self, h: float) -> None:
        if self.y - h < MARGIN + 0.3:
            self.new()

    def text(self, x: float, line: str, size: float = 8, bold: bool = False, mono: bool = False) -> None:
        self.fig.text(x / A4[0], self.y / A4[1], line, fontsize=size, va="top",
                      fontweight="bold" if bold else "normal", family="monospace" if mono else "sans-serif")


def _wrapped(row: list[str], widths: list[int]) -> list[list[str]]:
    cells = [textwrap.wrap(c, max(w, 4)) or [""] for c, w in zip(row, widths)]
    return [[c[i] if i < len(c) else "" for c in cells] for i in range(max(len(c) for c in cells))]


def _table(p: Pages, t: Table, x: float, width: float) -> None:
    chars = int(width / CHAR_W)
    natural = [max([len(h)] + [len(r[i]) for r in t.rows]) + 2 for i, h in enumerate(t.header)]
    scale = min(1.0, chars / max(1, sum(natural)))
    widths = [max(4, int(w * scale)) for w in natural]
    starts = [x + CHAR_W * sum(widths[:i]) for i in range(len(widths))]
    if not t.rows:
        p.need(LINE)
        p.text(x, _("%(title)s: none.", title=t.title))
        p.y -= LINE
        return
    lines = [(True, t.header)] + [(False, line) for row in t.rows for line in _wrapped(row, [w - 2 for w in widths])]
    for bold, line in lines:
        p.need(LINE)
        for sx, cell in zip(starts, line):
            p.text(sx, cell, bold=bold)
        p.y -= LINE
    if t.note:
        p.need(LINE)
        p.text(x, t.note, size=7)
        p.y -= LINE


def _section(p: Pages, t: Table, f: Figures) -> None:
    usable = A4[0] - 2 * MARGIN
    p.need(LINE * 2 + (CHART_H if t.chart else LINE * min(len(t.rows) + 1, 6)))
    p.y -= LINE * 0.6
    p.text(MARGIN, t.title, size=10, bold=True)
    p.y -= LINE * 1.5
    if not t.chart:
        _table(p, t, MARGIN, usable)
        return
    top = p.y
    left = usable * 0.55
    ax = p.fig.add_axes([(MARGIN + 0.45) / A4[0], (top - CHART_H + 0.35) / A4[1], (left - 0.55) / A4[0],
                         (CHART_H - 0.55) / A4[1]])
    charts.CHARTS[t.chart](ax, f)
    _table(p, t, MARGIN + left + 0.15, usable - left - 0.15)
    if p.y > top - CHART_H:  # the table was shorter than the chart (a table that ran on moved to a new page)
        p.y = min(p.y, top - CHART_H)


def write(f: Figures, path: str) -> int:
    """Write the PDF to ``path``; return its number of pages."""
    with PdfPages(path, metadata={"Title": "Situation report", "Creator": "ussd-console report",
                                  "CreationDate": None, "ModDate": None}) as pdf:
        p = Pages(pdf, f.checkpoint)
        p.text(MARGIN, _("Situation report"), size=16, bold=True)
        p.y -= LINE * 2.2
        for line in title_lines(f):
            p.text(MARGIN, line)
            p.y -= LINE
        p.y -= LINE * 0.5
        heads = headline(f)
        for part in (heads[:3], heads[3:]):  # two lines: a million cases still fits the page's width
            p.text(MARGIN, "   ".join(f"{k}: {v}" for k, v in part), size=9, bold=True)
            p.y -= LINE * 1.3
        p.y -= LINE * 0.3
        for note in labels.notes(f):
            p.text(MARGIN, note, size=7)
            p.y -= LINE
        for t in tables(f):
            _section(p, t, f)
        p.need(LINE * 3)
        p.y -= LINE
        p.text(MARGIN, _("Audit log checkpoint at report time:"), bold=True)
        p.y -= LINE
        for chunk in textwrap.wrap(f.checkpoint, int((A4[0] - 2 * MARGIN) / (CHAR_W * 1.05))):
            p.need(LINE)
            p.text(MARGIN, chunk, size=7, mono=True)
            p.y -= LINE
        p.close_page()
        return p.count
