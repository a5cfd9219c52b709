"""The store's reads as named records: what the console's panels, the exports and the commands hold.

A read hands out these instead of dicts, so a misspelt field is an error where it is written, not a
``KeyError`` on the operator's screen. Each record's fields are in the order its JSON line has
always had (the columns of the table, then what the read adds), and ``to_dict`` is that line's
object: ``--json`` prints ``record.to_dict()``, byte for byte what it printed from the dicts.
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypeVar


R = TypeVar("R")


def record(cls: type[R]) -> type[R]:
    """Give a ``NamedTuple`` its ``to_dict``: the explicit dict a JSON line is made of, its fields
    in their declared order (a ``NamedTuple`` takes no mixin, so this adds it)."""

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()

    cls.to_dict = to_dict  # type: ignore[attr-defined]
    return cls


@record
class Case(NamedTuple):
    """One case of the applied ledger (``cases``, ``cases_by_arrival``); ``disputed`` while an
    open conflict concerns it."""

    id: int
    case_key: str
    frame_id: str
    frame_text: str
    seq: int
    site: str
    need: str
    headcount: int
    pri: int
    first_seen: float
    updated_at: float
    source: str
    version: int
    status: str
    disputed: bool


@record
class RankedCase(NamedTuple):
    """One row of the dispatch order (``ranking``), with its place in it."""

    id: int
    frame_id: str
    site: str
    need: str
    headcount: int
    pri: int
    first_seen: float
    status: str
    disputed: bool
    rank: int


class RankingRow(NamedTuple):
    """One row of the whole dispatch order as an export streams it (``ranking_rows``)."""

    frame_id: str
    site: str
    need: str
    headcount: int
    pri: int
    first_seen: float
    status: str
    disputed: bool


class ExportCase(NamedTuple):
    """One case as the cases export streams it (``case_rows``), in arrival order."""

    frame_id: str
    site: str
    need: str
    headcount: int
    pri: int
    status: str
    disputed: bool
    version: int
    first_seen: float
    updated_at: float
    source: str
    frame_text: str


@record
class Conflict(NamedTuple):
    """A quarantined conflict. ``first_*`` is what the ledger held when it was raised; ``ledger_*``
    what it holds for the case now (None when no such case)."""

    id: int
    frame_id: str
    case_key: str
    frame_text: str
    first_frame_id: str
    first_text: str
    reason: str
    first_seen: float
    last_seen: float
    seen_count: int
    source: str
    status: str
    resolved_at: float | None
    resolved_by: str | None
    ledger_frame_id: str | None = None
    ledger_text: str | None = None


@record
class Reject(NamedTuple):
    """A line that was not a valid frame."""

    id: int
    ts: float
    source: str
    outcome: str
    reason: str
    frame_id: str
    frame_text: str
    file: str | None
    line: int | None


@record
class Activity(NamedTuple):
    """One outcome of the live feed."""

    id: int
    ts: float
    source: str
    frame_id: str
    outcome: str
    reason: str
    file: str | None
    line: int | None


@record
class Eviction(NamedTuple):
    """One run of the eviction, from its log."""

    id: int
    ran_at: float
    retention_seconds: int
    cutoff: float
    removed: int
    oldest: float | None
    newest: float | None
    started_by: str


@record
class PolicyChange(NamedTuple):
    """One row of the retention policy's history (an exception has ``is_exception``)."""

    id: int
    retention_seconds: int
    set_at: float
    set_by: str
    reason: str
    is_exception: bool
    audit_id: int | None


@record
class Policy(NamedTuple):
    """The retention policy in force; ``fault`` says why a newer row is not applied, or is None."""

    retention_seconds: int
    set_at: float | None
    set_by: str
    reason: str
    is_exception: bool
    audit_id: int | None
    fault: str | None


@record
class Totals(NamedTuple):
    """The header's and ``status``'s figures: frames by outcome, the cases and the policy's fault."""

    cases: int
    headcount_total: int
    duplicates: int
    conflicts: int
    conflicts_open: int
    rejects: int
    applied: int
    frames: int
    seen_frames: int
    retention_days: float
    retention_fault: str | None
    cases_by_status: dict[str, int]


@record
class Witnesses(NamedTuple):
    """The dedup witnesses kept, the oldest one's first sight, and how many the policy expires now."""

    kept: int
    oldest: float | None
    cutoff: float
    due: int


@record
class HeadcountGroup(NamedTuple):
    """People and cases of one need or one site."""

    key: str
    headcount: int
    cases: int


@record
class InboxFile(NamedTuple):
    """One inbox file as ``files`` lists it: its shown state and the path that carried it."""

    name: str
    state: str
    path: str
    frames: int
    lines: int
    format: str | None
    reason: str | None
    archived_as: str | None
    claimed_at: float
    finished_at: float | None


class InboxFileRow(NamedTuple):
    """One inbox file as the files export streams it, with its stored state."""

    name: str
    source: str
    format: str | None
    state: str
    line: int
    frames: int
    claimed_at: float
    finished_at: float | None
    archived_as: str | None
    reason: str | None


class ConflictRow(NamedTuple):
    """One conflict as the quarantine export streams it, open and resolved alike."""

    id: int
    status: str
    frame_id: str
    frame_text: str
    first_frame_id: str
    first_text: str
    reason: str
    seen_count: int
    first_seen: float
    last_seen: float
    source: str
    resolved_at: float | None
    resolved_by: str | None


class RejectRow(NamedTuple):
    """One reject as the rejects export streams it, oldest first."""

    ts: float
    source: str
    file: str | None
    line: int | None
    outcome: str
    reason: str
    frame_id: str
    frame_text: str
