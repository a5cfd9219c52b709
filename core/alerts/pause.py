"""Alert targets paused since the home was restored from a backup, until an admin has looked.

A backup carries ``config.toml`` (the ``[alerts]`` command and URL) and the outbox's pending
alerts. ``restore`` therefore writes ``alerts-paused.json`` into the new home with a random id
of its own: while it stands, no alert is sent (pending ones wait in the outbox) and ``status``
and the console header say so. An admin's signed ``alerts.resume`` entry naming that id lifts
it (``alerts resume``); entries of the old home's log, carried in the backup, never name it.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

from core.i18n import _, moment
from core.rules.text import Said, plain

MARKER = "alerts-paused.json"
RESUME = "alerts.resume"


def marker_path(home) -> Path:
    return Path(home.root) / MARKER


def write_marker(folder: Path, source: str, made_at) -> None:
    """The pause of a home being laid out in ``folder`` (before it gets its final name)."""
    from core.home import FILE_MODE

    path = Path(folder) / MARKER
    path.write_text(json.dumps({"id": secrets.token_hex(8), "since": time.time(), "restored_from": source,
                                "made_at": made_at if isinstance(made_at, (int, float)) else None}),
                    encoding="utf-8")
    path.chmod(FILE_MODE)


def read_marker(home) -> dict | None:
    """The pause recorded in the home, or None. A marker that does not read still pauses."""
    path = marker_path(home)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError:
        return {"id": None, "since": None, "restored_from": None}
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return {"id": None, "since": None, "restored_from": None}
    return data


def resumed(db, pause_id) -> bool:
    """Whether the log holds an ``alerts.resume`` entry for this pause."""
    if not isinstance(pause_id, str):
        return False
    for (raw,) in db.execute_sql(f"SELECT payload FROM audit_log WHERE action = {db.param}", (RESUME,)).fetchall():
        try:
            if json.loads(raw).get("pause") == pause_id:
                return True
        except (TypeError, ValueError, AttributeError):
            continue
    return False


def paused(home, db=None) -> dict | None:
    """The pause in force (``since``, ``restored_from``), or None. With ``db``, a pause its signed
    resume has lifted (its marker not yet removed) is over too."""
    if home is None:
        return None
    marker = read_marker(home)
    if marker is None or (db is not None and resumed(db, marker.get("id"))):
        return None
    return marker


def words(marker: dict) -> str:
    """Why alerts are not sent, and what lifts it, in one line, in the operator's language (``Said``:
    the backup's name in it is made plain)."""
    since = marker.get("since")
    source = marker.get("restored_from")
    about = {"when": moment(since, seconds=False) if isinstance(since, (int, float)) else _("restore")}
    if isinstance(source, str):
        return Said(_("alert targets PAUSED since this home was restored at %(when)s from %(backup)s: nothing is "
                      "sent and pending alerts wait; an admin checks [alerts] in config.toml, then signs "
                      "`ussd-console alerts resume`", backup=plain(source, 300), **about))
    return Said(_("alert targets PAUSED since this home was restored at %(when)s: nothing is sent and pending "
                  "alerts wait; an admin checks [alerts] in config.toml, then signs `ussd-console alerts resume`",
                  **about))