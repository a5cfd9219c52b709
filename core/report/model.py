"""The report's figures as plain data: what every rendering (HTML, PDF, ``--json``, the console's
Overview) shows, computed once (``figures.compute``) so none of them can disagree."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Count:
    """One row of a breakdown: a key (a need, a site, a status ...), its cases and its people."""

    key: str
    label: str
    cases: int
    people: int = 0


@dataclass(frozen=True)
class Figures:
    home: str
    since: float
    until: float
    made_at: float
    site: str | None
    cases: int
    people: int
    by_need: list[Count]
    by_site: list[Count]
    sites_total: int
    by_status: list[Count]
    waiting: list[Count]  # open and dispatched cases of the period, by how long they have waited
    oldest_waiting: float | None  # seconds the longest-waiting open case has waited
    arrivals: list[tuple[float, int]]  # (start of the bucket, new cases), every bucket of the period
    bucket_seconds: int  # an hour, or a day for a period of more than 8 days
    ranking: list[dict]
    conflicts: dict
    rejects_by_reason: list[Count]
    rejects_by_path: list[Count]
    health: dict
    checkpoint: str
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return asdict(self)
