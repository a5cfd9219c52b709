"""The receiver's health as one dict, for ``status --json``, the metrics file and ``watch``'s
systemd status: who is taking the inbox now, its paths, the last sweep and frame, the alert
backlog and the faults in force.

What only a running service knows (its observer, its sweep, its faults) comes
from the heartbeat records of the services alive on this home; what the store
knows (the last frame, the outbox) from the store, so any process can ask.
"""

from __future__ import annotations

from core.home import files_waiting
from core.inbox.heartbeat import live
from core.store import outbox
from core.store.records import Totals

# The worst of several processes' states wins, so one broken receiver is never hidden by a good one.
_OBSERVER_ORDER = ("dead", "restarting", "running", "off")


def last_frame_at(receiver) -> float | None:
    """When the newest frame was decided (the live feed's newest row)."""
    A = receiver.m.Activity
    return A.select(A.ts).order_by(A.id.desc()).limit(1).scalar()


def gather(home, receiver, targets: list[str] | None = None) -> dict:
    beats = live(home)
    observers = [b.get("observer") for b in beats]
    observer = next((o for o in _OBSERVER_ORDER if o in observers), "none") if beats else "none"
    sweeps = [b.get("sweep") for b in beats]
    sweep = ("running" if "running" in sweeps else "off") if beats else "none"
    faults = sorted({f for b in beats for f in b.get("faults", [])})
    swept = [b["last_sweep_at"] for b in beats if b.get("last_sweep_at")]
    return {
        "receiver": {
            "running": bool(beats),
            "processes": [{k: b.get(k) for k in ("pid", "role", "started_at", "beat_at")} for b in beats],
        },
        "observer": observer,
        "sweep": sweep,
        "last_sweep_at": max(swept) if swept else None,
        "last_frame_at": last_frame_at(receiver),
        "files_waiting": files_waiting(home),
        "outbox_pending": outbox.pending_count(receiver.db, include_new=bool(targets)),
        "alerts_delivered": outbox.delivered_count(receiver.db),
        "alert_targets": sorted(targets or []),
        "faults_open": len(faults),
        "faults": faults,
    }


def one_line(h: dict, totals: Totals) -> str:
    """systemd's STATUS=: what an operator wants from `systemctl status` at a glance."""
    bits = [f"observer {h['observer']}", f"sweep {h['sweep']}", f"{totals.cases} cases",
            f"{totals.conflicts_open} conflicts open", f"{h['outbox_pending']} alerts pending"]
    if h["faults_open"]:
        bits.append(f"{h['faults_open']} fault(s): {h['faults'][0][:80]}")
    return "; ".join(bits)
