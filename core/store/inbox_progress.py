"""The inbox's progress table: one row per claimed file, and files per delivery path.

A file's row commits in the same transaction as the frames it covers (R8), so
``line`` and ``offset`` are always exactly what the ledger holds of that file.
Each advance is a compare-and-set on the line it started from: a second worker
that read the same part finds the row moved and rolls its frames back
(``ClaimTaken``). These are plain peewee queries on the models below; they run
inside ``Receiver.ingest_many``'s transaction through its ``within`` hook.
"""

from __future__ import annotations

from typing import Iterable

from peewee import BigIntegerField, DoubleField, IntegerField, IntegrityError, Model, TextField, fn

from .database import write_transaction
from .records import InboxFile, InboxFileRow

PROGRESS_FIELDS = ("state", "line", "offset", "frames", "source", "name", "format", "archived_as", "reason")


class ClaimTaken(Exception):
    """Another worker committed this file's progress first; our transaction rolls back."""


def bind_inbox_models(Base: type[Model]) -> dict:
    """The inbox's models on the store's ``Base``; ``bind_models`` adds them to its namespace."""

    class InboxFile(Base):
        """One claimed inbox file. ``line``/``offset`` commit with the frames they cover (R8)."""

        claim = TextField(primary_key=True)  # the file's name in the claimed folder, escaped
        name = TextField()  # its name in the inbox, escaped
        source = TextField()  # the delivery path that won the claim
        format = TextField(null=True)
        state = TextField(index=True)  # claimed, done, rejected
        line = IntegerField(default=0)  # lines read and committed
        # "offset" is a reserved word in PostgreSQL, so the column has another name.
        offset = BigIntegerField(default=0, column_name="byte_offset")  # bytes read and committed
        frames = IntegerField(default=0)
        claimed_at = DoubleField()
        updated_at = DoubleField()
        finished_at = DoubleField(null=True)
        archived_as = TextField(null=True)  # relative to the home
        reason = TextField(null=True)

        class Meta:
            table_name = "inbox_files"

    class InboxPathFiles(Base):
        """Files per delivery path, counted when the file's first progress commits."""

        source = TextField(primary_key=True)
        files = IntegerField(default=0)

        class Meta:
            table_name = "inbox_path_files"

    return {"InboxFile": InboxFile, "InboxPathFiles": InboxPathFiles}


def migrate_v2(db, m) -> None:
    db.create_tables([m.InboxFile, m.InboxPathFiles])


def progress(m, claim: str) -> dict | None:
    """The file's committed progress, or None before its first commit."""
    F = m.InboxFile
    fields = [getattr(F, name) for name in PROGRESS_FIELDS]
    return F.select(*fields).where(F.claim == claim).dicts().first()


def create_progress(m, claim, name, source, fmt, state, line, offset, frames, now, reason=None, archived=None) -> None:
    """The file's first row, and one more file for its path; ``ClaimTaken`` if the row exists."""
    try:
        m.InboxFile.insert(
            claim=claim, name=name, source=source, format=fmt, state=state, line=line, offset=offset,
            frames=frames, claimed_at=now, updated_at=now, finished_at=now if state != "claimed" else None,
            reason=reason, archived_as=archived,
        ).execute()
    except IntegrityError as exc:  # the row exists: someone else got here first
        raise ClaimTaken() from exc
    P = m.InboxPathFiles
    P.insert(source=source, files=1).on_conflict(
        conflict_target=[P.source], update={P.files: P.files + 1}
    ).execute()


def advance_progress(m, claim, expect_line, line, offset, frames, fmt, now) -> None:
    """Move a claimed file's row on from ``expect_line``; ``ClaimTaken`` if it is not there any more."""
    F = m.InboxFile
    changes = {F.line: line, F.offset: offset, F.frames: F.frames + frames, F.updated_at: now}
    if fmt is not None:
        changes[F.format] = fmt
    moved = F.update(changes).where((F.claim == claim) & (F.line == expect_line) & (F.state == "claimed")).execute()
    if moved != 1:
        raise ClaimTaken()


def finish_progress(m, claim, state, archived, reason, now) -> bool:
    """Mark a claimed file ``done`` or ``rejected``; False when another worker finished it first."""
    F = m.InboxFile
    with write_transaction(F._meta.database):
        return F.update(
            {F.state: state, F.archived_as: archived, F.reason: reason, F.finished_at: now, F.updated_at: now}
        ).where((F.claim == claim) & (F.state == "claimed")).execute() == 1


def set_archived_as(m, claim: str, archived: str) -> None:
    F = m.InboxFile
    with write_transaction(F._meta.database):
        F.update({F.archived_as: archived}).where(F.claim == claim).execute()


def file_counts(receiver) -> dict[str, int]:
    """Files per delivery path (``watch``, ``sweep``, ``cli``, ...), for the console and ``status``."""
    P = receiver.m.InboxPathFiles
    return dict(P.select(P.source, P.files).order_by(P.source).tuples())


def recent_files(receiver, limit: int = 50) -> list[dict]:
    """The newest claimed files with their state and progress, newest first."""
    F = receiver.m.InboxFile
    keys = ("name", "source", "format", "state", "line", "frames", "claimed_at", "finished_at", "archived_as", "reason")
    return list(F.select(*(getattr(F, k) for k in keys)).order_by(F.claimed_at.desc()).limit(limit).dicts())


# The word each state is shown as: "done" is the row's own word for a file processed to the end.
SHOWN_STATES = {"done": "processed", "rejected": "rejected", "claimed": "claimed", "vanished": "vanished"}
_STORED_STATES = {shown: stored for stored, shown in SHOWN_STATES.items()}


def inbox_files(receiver, state: str | None = None, limit: int = 200, offset: int = 0) -> list[InboxFile]:
    """Inbox files newest first, optionally of one shown state (processed, rejected, claimed, vanished),
    each with its shown state and the delivery path that carried it."""
    F = receiver.m.InboxFile
    query = F.select(F.name, F.state, F.source, F.frames, F.line, F.reason, F.archived_as, F.claimed_at,
                     F.finished_at, F.format)
    if state is not None:
        query = query.where(F.state == _STORED_STATES.get(state, state))
    rows = query.order_by(F.claimed_at.desc(), F.claim.desc()).limit(limit).offset(offset).dicts()
    return [InboxFile(name=r["name"], state=SHOWN_STATES.get(r["state"], r["state"]), path=r["source"],
                      frames=r["frames"], lines=r["line"], format=r["format"], reason=r["reason"],
                      archived_as=r["archived_as"], claimed_at=r["claimed_at"], finished_at=r["finished_at"])
            for r in rows]


def inbox_file_rows(receiver) -> Iterable[InboxFileRow]:
    """Every inbox file in the order claimed, streamed from one cursor (the files export)."""
    F = receiver.m.InboxFile
    q = F.select(*(getattr(F, name) for name in InboxFileRow._fields)).order_by(F.claimed_at, F.claim)
    return (InboxFileRow(*row) for row in q.tuples().iterator())


def files_by_state(receiver) -> dict[str, int]:
    """Inbox files per shown state, every state present (0 when none), for ``status``."""
    F = receiver.m.InboxFile
    counts = dict.fromkeys(SHOWN_STATES.values(), 0)
    for stored, n in F.select(F.state, fn.COUNT(F.claim)).group_by(F.state).tuples():
        counts[SHOWN_STATES.get(stored, stored)] = n
    return counts
