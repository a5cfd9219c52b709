"""What each export holds: the six views, their columns and their rows, streamed from the store.

Identifiers and frames are kept as stored (the writer guards every text cell
against formulas); free text from outside (reasons, file names, reject lines)
also has phone-number-like runs masked, so no export carries a phone number.
"""

from __future__ import annotations

import datetime as dt
from typing import Callable, Iterable, NamedTuple

from core.i18n import N_
from core.rules.cells import mask_phones
from core.rules.frame import NEED_NAMES
from core.signing import audit
from core.signing.operators import list_operators
from core.store.inbox_progress import inbox_file_rows


class View(NamedTuple):
    name: str
    stem: str  # file names: <stem>-<time>.<format>
    title: str  # what it holds, in English; shown translated (``_(view.title)``), the name never
    header: list[str]
    rows: Callable[[object], Iterable[list]]
    trailer: Callable[[object], list[list]] | None = None


def iso(ts: float | None) -> str:
    if ts is None:
        return ""
    return dt.datetime.fromtimestamp(float(ts)).astimezone().isoformat(timespec="seconds")


def _free(value: object) -> str:
    return mask_phones("" if value is None else str(value))


def _ranking(receiver) -> Iterable[list]:
    for rank, c in enumerate(receiver.ranking_rows(), 1):
        yield [rank, c.frame_id, c.site, c.need, NEED_NAMES.get(c.need, ""), c.headcount, c.pri, c.status,
               c.disputed, iso(c.first_seen)]


def _cases(receiver) -> Iterable[list]:
    for c in receiver.case_rows():
        yield [c.frame_id, c.site, c.need, NEED_NAMES.get(c.need, ""), c.headcount, c.pri, c.status, c.disputed,
               c.version, iso(c.first_seen), iso(c.updated_at), c.source, c.frame_text]


def _quarantine(receiver) -> Iterable[list]:
    for q in receiver.conflict_rows():
        yield [q.id, q.status, q.frame_id, q.frame_text, q.first_frame_id, q.first_text, q.reason, q.seen_count,
               iso(q.first_seen), iso(q.last_seen), q.source, iso(q.resolved_at), q.resolved_by or ""]


def _rejects(receiver) -> Iterable[list]:
    for x in receiver.reject_rows():
        yield [iso(x.ts), x.source, _free(x.file), x.line, x.outcome, x.reason, _free(x.frame_id),
               _free(x.frame_text)]


def _files(receiver) -> Iterable[list]:
    for f in inbox_file_rows(receiver):
        yield [_free(f.name), f.source, f.format or "", f.state, f.line, f.frames, iso(f.claimed_at),
               iso(f.finished_at), _free(f.archived_as), _free(f.reason)]


def _audit(receiver) -> Iterable[list]:
    for e in audit.entries(receiver):
        payload = e["payload"] if isinstance(e["payload"], str) else audit.canonical_json(e["payload"])
        yield [e["seq"], iso(e["at"]) if isinstance(e["at"], (int, float)) else str(e["at"]), e["operator"],
               e["key"], e["action"], e["target"], _free(e["reason"]), _free(payload), e["prev_hash"], e["hash"]]


def _checkpoint(receiver) -> list[list]:
    """The log's checkpoint, to keep outside the machine: entry count, head hash, operator keys."""
    head = audit.head(receiver)
    rows = [[], ["checkpoint", "entries", head.count], ["checkpoint", "head", head.hash]]
    for op in list_operators(receiver):
        rows.append(["checkpoint", f"key {op['name']}", op["fingerprint"]])
    # The line `audit checkpoint` prints, which `audit verify --checkpoint` takes back later.
    result, cp = audit.make_checkpoint(receiver)
    rows.append(["checkpoint", "line", cp.line()] if cp is not None
                else ["checkpoint", "line", f"none: the log does not verify ({result.why})"])
    return rows


VIEWS: dict[str, View] = {v.name: v for v in [
    View("cases", "cases", N_("the applied ledger"),
         ["frame_id", "site", "need", "need_name", "headcount", "pri", "status", "disputed", "version",
          "first_seen", "updated_at", "path", "frame"], _cases),
    View("ranking", "dispatch", N_("dispatch order (open and dispatched)"),
         ["rank", "frame_id", "site", "need", "need_name", "headcount", "pri", "status", "disputed", "first_seen"],
         _ranking),
    View("quarantine", "quarantine", N_("every conflict, open and resolved"),
         ["id", "status", "frame_id", "frame", "first_frame_id", "first_frame", "reason", "seen", "first_seen",
          "last_seen", "path", "resolved_at", "resolved_by"], _quarantine),
    View("rejects", "rejects", N_("frames that were not frames"),
         ["when", "path", "file", "line", "outcome", "reason", "frame_id", "text"], _rejects),
    View("files", "files", N_("inbox files and where they went"),
         ["name", "path", "format", "state", "lines", "frames", "claimed_at", "finished_at", "archived_as",
          "reason"], _files),
    View("audit", "audit", N_("the signed log and its checkpoint"),
         ["seq", "at", "operator", "key", "action", "target", "reason", "payload", "prev_hash", "hash"],
         _audit, _checkpoint),
]}
