"""Retention and eviction writes (R7): the policy in force, and age-only eviction of witnesses.

Apart from the ingest (``ledger``) because they share nothing with it but the
store: a policy change is a signed operator action, and eviction runs in short
transactions of its own so the console's reads never wait long behind it.
"""

from __future__ import annotations

import logging
import time

from peewee import chunked

from core.i18n import N_
from core.rules.retention import RetentionError, check_retention

from .database import write_transaction
from .totals import bump_total

log = logging.getLogger("ussd.receiver")

_IN_BATCH = 500  # ids per IN (...) delete


class RetentionWrites:
    """Retention and eviction, the other writing half of ``Receiver`` (needs ``self.db``, ``self.m``
    and ``self.retention``)."""

    def set_retention(self, seconds: int, set_by: str = "operator", reason: str = "",
                      signed: bool = False, audit_id: int | None = None, now: float | None = None) -> dict:
        """Record a signed policy change (``core.signing.actions.RETENTION`` signs it first).

        Refused below 72 h, below 30 days unless signed, and without its audit
        entry: a row without one would never be applied.
        """
        seconds = int(seconds)
        is_exception = check_retention(seconds, signed)
        if audit_id is None:
            raise RetentionError(N_("a retention change is signed by an operator: use %(command)s"),
                                 command="`ussd-console retention set`")
        with write_transaction(self.db):
            if seconds == self.retention_seconds() and self.m.Policy.select().exists():
                return self.retention()
            self.m.Policy.create(
                retention_seconds=seconds, set_at=time.time() if now is None else now,
                set_by=set_by, reason=reason, is_exception=is_exception, audit_id=audit_id,
            )
        log.info("retention set to %ss by %s", seconds, set_by)
        return self.retention()

    def evict(self, now: float | None = None, started_by: str = "api", chunk: int = 2000) -> int:
        """Age-only eviction of dedup witnesses, in short transactions; logged (R7)."""
        m = self.m
        now = time.time() if now is None else float(now)
        in_force = self.retention()
        if in_force["fault"]:
            log.warning("%s", in_force["fault"])
        policy = in_force["retention_seconds"]
        cutoff = now - policy
        removed = 0
        oldest = newest = None
        S = m.SeenFrame
        while True:
            with write_transaction(self.db):
                rows = list(
                    S.select(S.frame_id, S.first_seen)
                    .where(S.first_seen < cutoff)
                    .order_by(S.first_seen)
                    .limit(chunk)
                    .tuples()
                )
                if not rows:
                    break
                for part in chunked([r[0] for r in rows], _IN_BATCH):
                    S.delete().where(S.frame_id.in_(part)).execute()
                bump_total(self.db, m, [("seen_frames", -len(rows))])
            if oldest is None:
                oldest = rows[0][1]
            newest = rows[-1][1]
            removed += len(rows)
            if len(rows) < chunk:
                break
        if removed or started_by != "schedule":
            with write_transaction(self.db):
                m.Eviction.create(
                    ran_at=now, retention_seconds=policy, cutoff=cutoff, removed=removed,
                    oldest=oldest, newest=newest, started_by=started_by,
                )
            log.info("eviction by %s: %d removed (cutoff %.0f, policy %ss)", started_by, removed, cutoff, policy)
        return removed
