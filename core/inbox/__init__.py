"""The inbox: files and claims (``files``), the delivery of one file (``delivery``, ending in a
``result``, or in ``rejecting``), and the service that runs the push and pull paths (``service``,
with its ``observer``, ``faults``, ``fault_alerts``, ``connections`` and ``heartbeat``). The
inbox's folders are the home's (``core.home``); the commit hook it shares with the gateways is
the store's (``core.store.commit_hold``).

The names below are looked up on first use (PEP 562), as in ``core``: a command that only lists
the inbox's files does not pay for the service, its alert threads and the spreadsheet readers.
"""

from __future__ import annotations

from core.lazy import lazy_names

_LAZY = {
    "SHOWN_STATES": "core.store.inbox_progress",
    "file_counts": "core.store.inbox_progress",
    "files_by_state": "core.store.inbox_progress",
    "inbox_files": "core.store.inbox_progress",
    "recent_files": "core.store.inbox_progress",
    "HOLD_ENV": "core.store.commit_hold",
    "deliver": "core.inbox.delivery",
    "deliver_until_done": "core.inbox.delivery",
    "hold_after_commit": "core.store.commit_hold",
    "claimed_dir": "core.home",
    "kind_skip": "core.inbox.files",
    "prepare_home": "core.inbox.files",
    "quiet_skip": "core.home",
    "FileResult": "core.inbox.result",
    "InboxService": "core.inbox.service",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_names(__name__, _LAZY)
