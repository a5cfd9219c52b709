"""The report as one self-contained HTML file: the charts are inline SVG, the style is inline,
nothing is fetched (it opens offline, on a phone, from an email attachment). Every text is
escaped; each chart sits beside the table of its numbers."""

from __future__ import annotations

import re
from html import escape

from core.i18n import _, language

from . import charts, labels
from .model import Figures
from .sections import Table, headline, tables, title_lines

STYLE = """
body{font-family:sans-serif;margin:1.2em;color:#111;max-width:62em}
h1{font-size:1.5em;margin:0 0 .2em} h2{font-size:1.1em;margin:1.2em 0 .3em;border-bottom:1px solid #444}
.meta{margin:0;color:#333} .heads{display:flex;flex-wrap:wrap;gap:.6em;margin:.8em 0}
.head{border:1px solid #444;padding:.3em .7em;min-width:7em} .head b{display:block;font-size:1.4em}
.pair{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start} .chart svg{max-width:100%;height:auto}
table{border-collapse:collapse;font-size:.9em} th,td{border:1px solid #888;padding:.15em .5em;text-align:left}
td.n{text-align:right} .note{font-size:.85em;color:#333;margin:.2em 0}
.checkpoint{margin-top:2em;font-family:monospace;font-size:.85em;word-break:break-all}
@media print{body{margin:0}.pair{break-inside:avoid}}
"""


def _cell(text: str, header: str) -> str:
    """A number right-aligned, in any language's digit grouping; the columns of names never."""
    numeric = re.sub(r"[\s,.]", "", text).isdigit() and header not in {_(w) for w in ("frame", "site", "conflict", "state")}
    return f"<td class=\"n\">{escape(text)}</td>" if numeric else f"<td>{escape(text)}</td>"


def _table(t: Table) -> str:
    if not t.rows:
        none = escape(_("None."))
        return f"<p class=\"note\">{none}</p>"  # under its own heading
    head = "".join(f"<th scope=\"col\">{escape(h)}</th>" for h in t.header)
    body = "".join("<tr>" + "".join(_cell(c, h) for c, h in zip(row, t.header)) + "</tr>" for row in t.rows)
    note = f"<p class=\"note\">{escape(t.note)}</p>" if t.note else ""
    return f"<table><caption hidden>{escape(t.title)}</caption><thead><tr>{head}</tr></thead>" \
           f"<tbody>{body}</tbody></table>{note}"


def _section(t: Table, f: Figures) -> str:
    inner = _table(t)
    if t.chart:
        chart = charts.svg(t.chart, f)
        label = escape(_("%(title)s (the table beside it has the numbers)", title=t.title))
        inner = f"<div class=\"pair\"><div class=\"chart\" role=\"img\" aria-label=\"{label}\">{chart}</div>" \
                f"<div>{inner}</div></div>"
    return f"<section><h2>{escape(t.title)}</h2>{inner}</section>"


def render(f: Figures) -> str:
    meta = "".join(f"<p class=\"meta\">{escape(line)}</p>" for line in title_lines(f))
    heads = "".join(f"<div class=\"head\"><b>{escape(v)}</b>{escape(k)}</div>" for k, v in headline(f))
    notes = "".join(f"<p class=\"note\">{escape(x)}</p>" for x in labels.notes(f))
    body = "".join(_section(t, f) for t in tables(f))
    title = escape(_("Situation report"))
    checkpoint = escape(_("Audit log checkpoint at report time: %(checkpoint)s", checkpoint=f.checkpoint))
    return (f"<!DOCTYPE html>\n<html lang=\"{language()}\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{title}</title><style>{STYLE}</style></head><body>"
            f"<h1>{title}</h1>{meta}<div class=\"heads\">{heads}</div>{notes}{body}"
            f"<p class=\"checkpoint\">{checkpoint}</p>"
            "</body></html>\n")
