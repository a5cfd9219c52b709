"""The report's health section: the receiver, the inbox, alerts, gateways and backups as
``status --json`` reports them now, cut to what a coordinator reads (no key, token or path
that a ``--json`` status hides). The backups' line is in the operator's language already (the
report is only ever a page)."""

from __future__ import annotations

from core.backup.schedule import status as backup_status, words as backup_words
from core.gateways import accounts
from core.ops.health import gather
from core.rules.text import escape_text


def report_health(home, receiver, targets: list[str]) -> dict:
    h = gather(home, receiver, targets)
    backup = backup_status(home)
    gateways = {escape_text(name, 64): {"kind": info["kind"], "accepted": info["posts"], "refused": info["refused"],
                                        "retired": info["retired_at"] is not None, "last_post": info["last_post"]}
                for name, info in accounts.counts(receiver.db).items()}
    return {"receiver_running": h["receiver"]["running"], "observer": h["observer"], "sweep": h["sweep"],
            "last_frame_at": h["last_frame_at"], "files_waiting": h["files_waiting"],
            "alerts_pending": h["outbox_pending"], "faults": [escape_text(f, 300) for f in h["faults"]],
            "gateways": gateways, "backup": backup_words(backup),
            "backup_fault": backup["fault"]}
