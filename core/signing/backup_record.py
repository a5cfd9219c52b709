"""Recording the home's backup key in the log: an admin's signed ``backup.key`` entry
(what the entry means and how it is read: ``backup_key``)."""

from __future__ import annotations

from core.i18n import N_, _
from core.rules.text import Said

from . import roles
from .backup_key import ACTION, TARGET, recorded
from .keys import ActionError, fingerprint, short_fingerprint
from .signed_action import SignedAction


def _plan(receiver, by, public_key: str, home_id: str | None) -> tuple[str, dict]:
    """Refused when the key is already the one in force."""
    fp = fingerprint(bytes.fromhex(public_key))
    known = recorded(receiver.db)
    if known and known[-1] == fp:
        raise ActionError(N_("this home's backup key %(key)s is already recorded; nothing to sign"),
                          key=short_fingerprint(fp))
    return TARGET, {"public_key": public_key, "fingerprint": fp, "home_id": home_id}


RECORD_KEY = SignedAction(
    ACTION, roles.ADMIN, "Record the home's backup key in the log", "backup key record",
    summary=lambda done: Said(_("backup key %(key)s recorded", key=done["fingerprint"][:16])),  # hex digits
    plan=_plan, apply=lambda receiver, payload, entry, at: {"fingerprint": payload["fingerprint"]},
    lines=lambda receiver, payload: [_("record backup key %(fingerprint)s as this home's",
                                       fingerprint=payload["fingerprint"])],
)
