"""Lifting the pause of a restored home's alerts: an admin's signed ``alerts.resume`` entry.

The entry names the pause (its random id) and what the admin looked at before signing: the
``[alerts]`` command and URL (the URL masked) in force. Nothing in the tables changes; the
marker is removed once the entry is committed, and a marker left behind (a removal that
failed) no longer pauses, since the log holds its resume.
"""

from __future__ import annotations

import shlex

from core.i18n import N_, _
from core.rules.text import plain
from core.signing import roles
from core.signing.keys import ActionError
from core.signing.signed_action import SignedAction
from core.urls import mask_url

from . import pause
from .config import load_alerts_config


def _targets(home) -> dict:
    try:
        config = load_alerts_config(home.config)
    except ValueError as exc:
        raise ActionError(N_("fix [alerts] in config.toml before resuming: %(reason)s"), reason=exc) from None
    return {"command": shlex.join(config.command) if config.command else None,
            "url": mask_url(config.url) if config.url else None}


def _plan(receiver, by, home) -> tuple[str, dict]:
    """Refused when the targets are not paused."""
    marker = pause.paused(home, receiver.db)
    if marker is None:
        raise ActionError(N_("the alert targets of this home are not paused; nothing to sign"))
    return "alerts", {"pause": marker.get("id"), "since": marker.get("since"),
                      "restored_from": marker.get("restored_from"), "targets": _targets(home)}


def _lines(receiver, payload: dict) -> list[str]:
    targets = payload["targets"]
    first = (_("resume the alerts paused since the restore from %(backup)s", backup=plain(payload["restored_from"]))
             if payload["restored_from"] else _("resume the alerts paused since the restore from a backup"))
    return [first, _("targets: command %(command)s; url %(url)s", command=plain(targets["command"] or "-"),
                     url=plain(targets["url"] or "-"))]


RESUME = SignedAction(
    pause.RESUME, roles.ADMIN, "Resume a restored home's paused alerts", "alerts resume",
    summary=lambda done: "alerts resumed", plan=_plan, lines=_lines,
    apply=lambda receiver, payload, entry, at: {"targets": payload["targets"],
                                                "restored_from": payload["restored_from"]},
)


def remove_marker(home, result: dict) -> dict:
    """Once the resume is signed, the pause marker goes; one left behind no longer pauses."""
    try:
        pause.marker_path(home).unlink(missing_ok=True)
    except OSError as exc:
        result["marker_left"] = f"{pause.marker_path(home)}: {exc.strerror}"  # the signed resume stands
    return result
