"""Recording the home's backup key in the log: an admin's signed ``backup.key`` entry
(what the entry means and how it is read: ``backup_key``)."""

from __future__ import annotations

from .actions import sign_action
from .backup_key import ACTION, TARGET, recorded
from .keys import ActionError, fingerprint, short_fingerprint


def record_key(home, receiver, public_key: str, home_id: str | None, *, operator: str, reason: str,
               passphrase: str | None = None, signer=None, now: float | None = None) -> dict:
    """Sign the home's backup key into the log (an admin's action); refused when it is already the key in force."""
    fp = fingerprint(bytes.fromhex(public_key))

    def plan():
        known = recorded(receiver.db)
        if known and known[-1] == fp:
            raise ActionError(f"this home's backup key {short_fingerprint(fp)} is already recorded; nothing to sign")
        return ACTION, TARGET, {"public_key": public_key, "fingerprint": fp, "home_id": home_id}

    def apply(payload, entry, at):
        return {"fingerprint": fp}

    return sign_action(home, receiver, plan, apply, operator, passphrase, reason, now, None, signer)
