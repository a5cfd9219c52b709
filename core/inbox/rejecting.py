"""How a claimed file ends when it is not archived: rejected whole, or vanished.

A file is rejected whole only when nothing in it can be read as a frame source
(binary, no usable columns, over the size limit); it goes to ``rejected/``
beside a ``.reason`` file, as a copy without phone columns and with every
phone-like run masked (the original only with ``keep_originals``). A claimed
file that someone else removed from ``inbox/.claimed/`` before it was read to
the end is ``vanished``: its row says so, instead of staying ``claimed`` or
being told as finished by another worker.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import stat
import time
from pathlib import Path

from core.config import InboxConfig
from core.home import Home, open_private
from core.rules import events
from core.rules.formats import FormatError, spreadsheet_kind
from core.rules.privacy import mask_phones
from core.rules.scrub import scrub, scrub_table
from core.rules.text import escape_text
from core.store.database import write_transaction
from core.store.inbox_progress import create_progress, finish_progress, progress, set_archived_as
from core.store.outbox import record as record_event
from core.store.receiver import Receiver

from .claim import Claim
from .files import NAME_MAX, archive, claimed_dir, drop_stages, existing_link, home_relative, home_tag, inside_home, link_in
from .result import FileResult
from .spreadsheets import sheet_rows

log = logging.getLogger("ussd.inbox")

# Every character escapes to at most 10, and a name has at most 255: a key is never cut short.
_KEY_LIMIT = 10 * NAME_MAX + 10


def claim_key(m, claim: str) -> str:
    """A claimed file's key in ``inbox_files``: its name, escaped and masked (a name may carry anything).

    Stores written before keys were escaped used the raw name; a file claimed
    then and still in flight is found under that.
    """
    key = mask_phones(escape_text(claim, _KEY_LIMIT))
    if key != claim and progress(m, key) is None and progress(m, claim) is not None:
        return claim
    return key


def _rejected_copy(claim_path: Path, inbox_name: str, config: InboxConfig, data: bytes | None):
    """What ``rejected/`` keeps, and its name: None to link the file as it came."""
    if config.keep_originals:
        return None, inbox_name
    try:
        st = os.lstat(claim_path)
    except FileNotFoundError:
        return None, inbox_name
    if not stat.S_ISREG(st.st_mode):
        return None, inbox_name
    if data is None and st.st_size <= config.max_file_bytes:
        with open(claim_path, "rb") as fh:
            data = fh.read(config.max_file_bytes + 1)
    if data is None or len(data) > config.max_file_bytes:
        return claim_path, inbox_name  # too big to hold: copied masked, as a stream
    if spreadsheet_kind(inbox_name):
        try:
            return scrub_table(sheet_rows(data, config.max_file_bytes), config.columns), inbox_name.rsplit(".", 1)[0] + ".csv"
        except FormatError:
            pass
    return scrub(inbox_name, data, site=config.columns), inbox_name


def reject(claim: Claim, reason: str, receiver: Receiver, home: Home, config: InboxConfig,
           data: bytes | None = None) -> FileResult:
    """Move a claimed file to ``rejected/`` (partly read or not) with a ``.reason`` file beside it.

    The row says ``rejected`` first; then the copy is made (``files.archive``
    stages it, so a resumed worker finds it instead of making a second) or,
    with ``keep_originals``, the file is linked in as it came; then its reason
    is written, and only then the claimed name removed. A worker resuming
    after a crash in between finishes the same move, so a file is never
    rejected twice.
    """
    claim_path, label, source = claim.path, claim.label, claim.source
    m, db = receiver.m, receiver.db
    key = claim_key(m, claim_path.name)
    reason = escape_text(reason, 300)  # ours; any outside name in it was masked where it was quoted
    now = time.time()
    with write_transaction(db):
        current = progress(m, key)
        if current is None:
            create_progress(m, key, label, source, None, "rejected", 0, 0, 0, now, reason=reason)
        elif current["state"] == "claimed":
            finish_progress(m, key, "rejected", None, reason, now)
        if current is None or current["state"] == "claimed":  # once per file: a resumed reject is not news
            record_event(db, events.file_rejected(mask_phones(label), reason, source), at=now)
    rejected = home.rejected
    rejected.mkdir(parents=True, exist_ok=True)
    inside_home(home, rejected)
    try:
        st = os.lstat(claim_path)
    except FileNotFoundError:
        return FileResult(label, source, "lost", reason="gone")
    copy, name = _rejected_copy(claim_path, claim.inbox_name, config, data)
    name = mask_phones(name)
    if copy is not None:
        moved = archive(home, claim_path.name, name, copy, where="rejected")
    else:
        moved = existing_link(st, rejected, name) if st.st_nlink > 1 else None
        if moved is None:
            moved = link_in(claim_path, rejected, name)
    note = (
        f"reason: {reason}\nfile: {label}\npath: {source}\n"
        f"rejected at: {dt.datetime.fromtimestamp(now).isoformat(timespec='seconds')}\n"
    )
    with os.fdopen(open_private(str(moved) + ".reason", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w",
                   encoding="ascii") as out:  # never through a link planted at the name
        out.write(note)
    set_archived_as(m, key, home_relative(home, moved))
    drop_stages(home, claim_path.name)
    try:
        os.unlink(claim_path)
    except FileNotFoundError:
        pass  # moved by a rename where links fail
    log.info("file %s rejected (%s), moved to %s", label, reason, home_relative(home, moved))
    return FileResult(label, source, "rejected", reason=reason, claimed=claim_path, archived=moved)


def vanished(claim: Claim, receiver: Receiver) -> FileResult:
    """The claimed file is gone: finished by another worker (its row says so), or removed by someone."""
    claim_path, label, source, resumer = claim.path, claim.label, claim.source, claim.resumer
    m = receiver.m
    key = claim_key(m, claim_path.name)
    row = progress(m, key)
    if row is not None and row["state"] != "claimed":
        log.info("claim lost by %s: %s was finished by another worker", resumer, label)
        return FileResult(label, source, "lost", reason="gone", claimed=claim_path)
    if row is None:  # nothing of it was ever committed, so nothing to end
        log.info("claim lost by %s: %s was gone before any of it was read (removed by someone else)", resumer, label)
        return FileResult(label, source, "lost", reason="gone", claimed=claim_path)
    line = row["line"]
    why = f"removed from inbox/.claimed/ by something other than the receiver after line {line}"
    now = time.time()
    ended = finish_progress(m, key, "vanished", None, why, now)
    if not ended:  # another worker ended it meanwhile: its word stands
        log.info("claim lost by %s: %s was finished by another worker", resumer, label)
        return FileResult(label, source, "lost", reason="gone", claimed=claim_path)
    log.warning("file %s vanished: %s; nothing after that line was read", label, why)
    return FileResult(label, source, "vanished", reason=why, claimed=claim_path, line=line)


def end_vanished_claims(receiver: Receiver, home: Home) -> int:
    """This home's rows still ``claimed`` whose file is gone from ``inbox/.claimed/`` end as ``vanished``.

    Only rows whose key carries this home's tag: on a PostgreSQL store shared by
    several homes, another home's claim is never in this folder and is not ours
    to end (claims made before the tag existed are left alone too). The rows are
    read before the folder is listed: a file claimed after the read has no row
    in it, and one finished meanwhile fails the row's compare-and-set, so only a
    file that really went is ended.
    """
    m = receiver.m
    F = m.InboxFile
    tag = f"-{home_tag(home)}."
    claimed_rows = [row for row in F.select(F.claim, F.line, F.name).where(F.state == "claimed").tuples()
                    if tag in row[0]]
    if not claimed_rows:
        return 0
    try:
        with os.scandir(claimed_dir(home)) as it:
            present = {e.name for e in it}
    except FileNotFoundError:
        present = set()
    keys = {mask_phones(escape_text(n, _KEY_LIMIT)) for n in present} | present
    ended = 0
    for key, line, name in claimed_rows:
        if key in keys:
            continue
        why = f"removed from inbox/.claimed/ by something other than the receiver after line {line}"
        if finish_progress(m, key, "vanished", None, why, time.time()):
            log.warning("file %s vanished: %s; nothing after that line was read", name, why)
            ended += 1
    return ended
