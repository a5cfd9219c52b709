"""Backups on a schedule, made by ``watch``: one every ``[backup] every`` seconds, each verified
right after it is written, the oldest beyond ``keep`` removed only after a new one verified.

A failed backup, or none verified for twice ``every``, is a fault of the running receiver (so
it is in ``status --json`` and goes out as an alert through the outbox); it clears itself with
the next verified backup. What happened last is kept in ``<home>/backup-state.json`` for
``status`` and for the next start.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Callable, NamedTuple

from core.home import replace_private, sync_folder
from core.i18n import _, moment, ngettext, number
from core.rules.text import Said, one_line, plain, said

from . import archive
from .config import BackupConfig, load_backup_config

log = logging.getLogger("ussd.backup")
STATE_NAME = "backup-state.json"
FAULT_KEY = "backup"


def state_path(home) -> Path:
    return Path(home.root) / STATE_NAME


def read_state(home) -> dict:
    try:
        data = json.loads(state_path(home).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_state(home, state: dict) -> None:
    path = state_path(home)
    replace_private(path, json.dumps(state, sort_keys=True).encode())  # never through a planted link
    sync_folder(path.parent)


def backups_in(folder: Path) -> list[Path]:
    """The finished backups in a folder, oldest first (temporary names are never listed)."""
    try:
        found = [p for p in Path(folder).iterdir() if p.is_file() and p.name.startswith(archive.PREFIX)
                 and p.name.endswith((archive.SUFFIX_PLAIN, archive.SUFFIX_AGE))]
    except OSError:
        return []
    return sorted(found, key=lambda p: (p.stat().st_mtime, p.name))


def overdue_words(state: dict, every: float, since: float, now: float) -> str | None:
    """Why backups are overdue (none verified for twice ``every``), or None."""
    last = (state.get("last_verified") or {}).get("at")
    reference = last if isinstance(last, (int, float)) else since
    if now - reference <= 2 * every:
        return None
    if last is None:
        return f"backup overdue: none verified in the {int(now - since)} s since the receiver started"
    return f"backup overdue: the last verified backup is {int(now - last)} s old (every {int(every)} s)"


def _when(at, now: float) -> float | None:
    """A recorded time that counts: a number, never in the future (a record from before dates were
    held to the verify time, or a clock set wrong, never hides what happens until then)."""
    if isinstance(at, bool) or not isinstance(at, (int, float)) or at != at or at > now:
        return None
    return float(at)


def verified_backups(home, folder: Path, state: dict | None = None) -> dict[str, float | None]:
    """The backups in ``folder`` (this home's backup folder) that count as verified, by file name,
    with when each was made: ``watch`` verified it as it made it, or ``backup verify`` passed on it
    there with this home. The one answer to "verified?": ``status`` and the console's list both ask it."""
    state = read_state(home) if state is None else state
    noted = state.get("verified") if isinstance(state.get("verified"), dict) else {}
    verified = {name: at for name, at in noted.items() if isinstance(name, str)}
    last = state.get("last_verified") or {}
    if last.get("file") and Path(last["file"]).parent == folder:
        verified.setdefault(Path(last["file"]).name, last.get("at"))
    present = {p.name for p in backups_in(folder)}
    return {name: at for name, at in verified.items() if name in present}


def verified_elsewhere(state: dict) -> dict[str, dict]:
    """This home's backups verified outside its backup folder (``backup --to``, then ``backup
    verify``): path -> ``at``, ``size``. They count though the stick may be unplugged now."""
    noted = state.get("elsewhere") if isinstance(state.get("elsewhere"), dict) else {}
    return {path: info for path, info in noted.items()
            if isinstance(path, str) and isinstance(info, dict) and isinstance(info.get("size"), int)}


def last_verified(home, folder: Path, state: dict | None = None, now: float | None = None) -> dict | None:
    """The newest verified backup (``at``, ``file``, ``size``): the last one ``watch`` made, or a
    newer one of ``verified_backups`` or ``verified_elsewhere``."""
    state = read_state(home) if state is None else state
    now = time.time() if now is None else now
    best = state.get("last_verified") if isinstance(state.get("last_verified"), dict) else None
    if best is not None and _when(best.get("at"), now) is None:
        best = None
    candidates = []
    for name, at in verified_backups(home, folder, state).items():
        try:
            candidates.append((at, str(folder / name), (folder / name).stat().st_size))
        except OSError:
            continue
    candidates.extend((info.get("at"), path, info["size"]) for path, info in verified_elsewhere(state).items())
    for at, file, size in candidates:
        at = _when(at, now)
        if at is None or (best is not None and at <= (best.get("at") or 0)):
            continue
        best = {"at": at, "file": file, "size": size}
    return best


def status(home) -> dict:
    """The ``backup`` object of ``status --json``: the last verified backup, the last failure, overdue."""
    state = read_state(home)
    try:
        config = load_backup_config(home.config)
    except ValueError as exc:
        return {**_shape(state), "every": None, "overdue": False, "fault": one_line(exc)}
    state = {**state, "last_verified": last_verified(home, config.folder(home), state)}
    overdue = None
    if config.every:
        # Since the last verified backup, or, before the first, since watch first scheduled them.
        since = (state.get("last_verified") or {}).get("at") or state.get("scheduled_since")
        if isinstance(since, (int, float)):
            overdue = overdue_words(state, config.every, since, time.time())
    failed = None
    failure = state.get("last_failure")
    # A failure stands until a backup made after it verified; a last verified date is never in the future.
    if isinstance(failure, dict) and (not state.get("last_verified")
                                      or (failure.get("at") or 0) >= state["last_verified"].get("at", 0)):
        failed = f"backup failed: {failure.get('why')}"
    return {**_shape(state), "every": config.every, "dir": str(config.folder(home)), "keep": config.keep,
            "overdue": bool(overdue), "fault": failed or overdue}


def warning(home) -> str | None:
    """The console header's word when backups need an operator: a word, never only a colour."""
    b = status(home)
    if b["fault"] and b["fault"].startswith("backup failed"):
        return "BACKUP FAILED"
    if b["overdue"]:
        return "BACKUP OVERDUE"
    return "BACKUP FAULT" if b["fault"] else None


ELSEWHERE_KEPT = 20  # verified backups outside the backup folder remembered, newest first


def note_verified(home, file: Path, at: float | None = None, folder: Path | None = None) -> None:
    """Remember that ``file`` (a backup of this home) verified, made at ``at`` (never later than
    now): one of ``verified_backups`` from then on when it is in the backup folder ``folder``
    (default: its own folder), else one of ``verified_elsewhere``."""
    state = read_state(home)
    now = time.time()
    at = now if at is None else min(at, now)
    file = Path(file)
    if folder is None or file.parent == folder:
        names = state.get("verified") if isinstance(state.get("verified"), dict) else {}
        present = {p.name for p in backups_in(file.parent)}
        names = {n: t for n, t in names.items() if n in present}  # removed backups are forgotten
        names[file.name] = at
        state["verified"] = names
    else:
        elsewhere = verified_elsewhere(state)
        elsewhere[str(file)] = {"at": at, "size": file.stat().st_size}
        kept = sorted(elsewhere.items(), key=lambda item: item[1].get("at") or 0, reverse=True)[:ELSEWHERE_KEPT]
        state["elsewhere"] = dict(kept)
    _write_state(home, state)


class BackupFile(NamedTuple):
    """One backup in the backup folder."""

    file: str  # its name
    at: float  # written at (its modification time)
    size: int
    encrypted: bool
    verified: bool


class BackupListing(NamedTuple):
    """The backup folder as the console lists it: ``folder`` None when the settings do not load
    (``fault`` says why); ``last_verified`` is the state file's record, wherever it was written."""

    folder: str | None
    rows: list[BackupFile]
    fault: str | None
    every: float | None
    keep: int | None
    last_verified: dict | None


def listing(home) -> BackupListing:
    """The backups in the backup folder, newest first, each verified or not: the console's list."""
    try:
        config = load_backup_config(home.config)
    except ValueError as exc:
        return BackupListing(folder=None, rows=[], fault=said(exc), every=None, keep=None, last_verified=None)
    folder = config.folder(home)
    verified = verified_backups(home, folder)
    rows = []
    for path in reversed(backups_in(folder)):
        try:
            info = path.stat()
        except OSError:
            continue
        rows.append(BackupFile(file=path.name, at=info.st_mtime, size=info.st_size,
                               encrypted=path.name.endswith(archive.SUFFIX_AGE), verified=path.name in verified))
    shown = "<home>/backups" if config.dir is None else str(folder)  # the home's own path is in the header
    b = status(home)
    return BackupListing(folder=shown, rows=rows, fault=b["fault"], every=config.every, keep=config.keep,
                         last_verified=b["last_verified"])


def words(b: dict) -> str:
    """The backups in one line, in the operator's language, for the situation report (``status``
    builds the same line with Rich): a ``Said``, the file's name and the fault in it made plain."""
    last = b.get("last_verified")
    if last:
        line = _("backups: last verified %(time)s %(file)s (%(size)s)", time=moment(last["at"], seconds=False),
                 file=plain(last["file"], 600),
                 size=ngettext("%(n)s byte", "%(n)s bytes", last["size"], n=number(last["size"])))
    else:
        line = _("backups: none verified yet")
    if not b.get("every"):
        line += " | " + _("not scheduled ([backup] every in config.toml)")
    if b.get("fault"):
        line += " | ! " + plain(b["fault"], 600)
    return Said(line)


def _shape(state: dict) -> dict:
    return {"last_verified": state.get("last_verified"), "last_failure": state.get("last_failure")}


class BackupSchedule:
    """Owned by ``watch``: ``tick()`` from its loop starts a backup when one is due (on a thread of
    its own, so a large store never holds up supervision) and raises or clears the fault."""

    def __init__(self, home, store_target: str, config: BackupConfig, fault: Callable[[str, str], object],
                 clear: Callable[[str], object], now: float | None = None):
        self.home, self.store_target, self.config = home, store_target, config
        self._fault, self._clear = fault, clear
        self.started_at = time.time() if now is None else now
        self._thread: threading.Thread | None = None
        self._failing: str | None = None

    @classmethod
    def for_service(cls, home, store_target: str, service, config: BackupConfig | None = None) -> "BackupSchedule":
        """The schedule for ``watch``, its faults those of the inbox service (status, alerts)."""
        return cls(home, store_target, config or load_backup_config(home.config),
                   fault=service.faults.report, clear=service.faults.clear)

    def due(self, now: float) -> bool:
        if not self.config.every:
            return False
        state = read_state(self.home)
        last = max(_when((state.get("last_verified") or {}).get("at"), now) or 0,
                   _when((state.get("last_failure") or {}).get("at"), now) or 0)
        return now - last >= self.config.every

    def tick(self, now: float | None = None) -> None:
        if not self.config.every:
            return
        now = time.time() if now is None else now
        state = read_state(self.home)
        if "scheduled_since" not in state:  # so that status and the console can tell none verified yet is late
            state["scheduled_since"] = self.started_at
            self._save(state)
        busy = self._thread is not None and self._thread.is_alive()
        if not busy and self.due(now):
            self._thread = threading.Thread(target=self.run_once, name="backup", daemon=True)
            self._thread.start()
        state = read_state(self.home)
        state["last_verified"] = last_verified(self.home, self.config.folder(self.home), state)
        late = overdue_words(state, self.config.every, self.started_at, now)
        if late and self._failing is None:
            self._fault(FAULT_KEY, late)
            self._failing = late

    def run_once(self) -> bool:
        """Make, verify, keep: True when a verified backup was made."""
        # Imported here: making a backup needs tarfile, the age and pg_dump layers and the verifier,
        # while the console's header and Retention screen import this module only to read the folder.
        from .make import make_backup

        folder = self.config.folder(self.home)
        state = read_state(self.home)
        try:
            # Verified before it gets its final name (an encrypted one before encryption: its identity is
            # kept offline, so the monthly drill with `backup verify --identity` checks the age layer).
            made = make_backup(self.home, self.store_target, folder, self.config.recipients, check=True)
        except Exception as exc:  # noqa: BLE001 - any failure is a fault and an alert, never a dead watch
            words = one_line(exc) or type(exc).__name__
            state["last_failure"] = {"at": time.time(), "why": words}
            self._save(state)
            self._fault(FAULT_KEY, f"backup failed: {words}")
            self._failing = words
            log.warning("scheduled backup failed: %s", words)
            return False
        at = min(made.manifest["made_at"], time.time())
        state["last_verified"] = {"at": at, "file": str(made.file), "size": made.size}
        self._save(state)
        removed = self._prune(folder, made.file)
        try:
            note_verified(self.home, made.file, at)
        except OSError as exc:
            log.warning("could not record the backup state: %s", one_line(exc))
        if self._failing is not None:
            self._clear(FAULT_KEY)
            self._failing = None
        log.info("scheduled backup verified: %s (%d bytes)%s", made.file, made.size,
                 f"; {removed} older removed" if removed else "")
        for words in (made.manifest.get("verified") or {}).get("not_checked", []):
            log.warning("scheduled backup %s: not checked: %s", made.file.name, words)
        return True

    def _save(self, state: dict) -> None:
        try:
            _write_state(self.home, state)
        except OSError as exc:
            log.warning("could not record the backup state: %s", one_line(exc))

    def _prune(self, folder: Path, newest: Path) -> int:
        older = [p for p in backups_in(folder) if p != newest]
        extra = len(older) + 1 - self.config.keep
        removed = 0
        for path in older[:max(extra, 0)]:
            try:
                path.unlink()
                removed += 1
            except OSError as exc:
                log.warning("could not remove an old backup %s: %s", path.name, one_line(exc))
        if removed:
            sync_folder(folder)
        return removed
