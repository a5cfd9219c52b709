"""The inbox: files and claims (``files``), the delivery of one file (``delivery``, ending in a
``result``, or in ``rejecting``), and the service that runs the push and pull paths (``service``,
with its ``observer``, ``faults``, ``fault_alerts`` and ``connections``)."""

from core.store.inbox_progress import SHOWN_STATES, file_counts, files_by_state, inbox_files, recent_files

from .delivery import HOLD_ENV, deliver, deliver_until_done, hold_after_commit
from .files import claimed_dir, kind_skip, prepare_home, quiet_skip
from .result import FileResult
from .service import InboxService

__all__ = [
    "FileResult",
    "SHOWN_STATES",
    "HOLD_ENV",
    "InboxService",
    "claimed_dir",
    "deliver",
    "deliver_until_done",
    "file_counts",
    "files_by_state",
    "inbox_files",
    "hold_after_commit",
    "kind_skip",
    "prepare_home",
    "quiet_skip",
    "recent_files",
]
