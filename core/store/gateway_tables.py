"""The gateways' tables: the signed accounts, the per-gateway counts, the last post and the gateway
message ids already taken (with the content each first carried), and their writes.

They are the store's, as every table is, so the listener's modules (``core.gateways``), the inbox
taking a spooled file in (``spooled``) and signing's replay of ``gateway add`` and ``retire``
(``core.signing``) all reach them from below. The account rows are written only by those signed
actions; the counts and message ids by the listener and the spool, in the ingest's transaction.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Mapping

from peewee import BigIntegerField, CompositeKey, Database, DoubleField, IntegerField, Model, TextField

from .database import bound_models

NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,12}")  # the path label is gw_<name>, within 16 characters

def _bind(db: Database) -> SimpleNamespace:
    class Base(Model):
        class Meta:
            database = db
            legacy_table_names = False

    class Gateway(Base):
        """One signed gateway account; ``token_hash`` is the SHA-256 of the path's token."""

        name = TextField(primary_key=True)
        kind = TextField()
        token_hash = TextField()
        secret_file = TextField(null=True)  # the path of the file holding the secret, never the secret
        public_url = TextField(null=True)
        reply = TextField(default="END")
        added_at = DoubleField()
        added_by = TextField()
        added_seq = IntegerField()
        retired_at = DoubleField(null=True)
        retired_seq = IntegerField(null=True)

        class Meta:
            table_name = "gateways"

    class GatewayCount(Base):
        gateway = TextField()
        what = TextField()
        count = BigIntegerField(default=0)

        class Meta:
            table_name = "gateway_counts"
            primary_key = CompositeKey("gateway", "what")

    class GatewayLast(Base):
        gateway = TextField(primary_key=True)
        at = DoubleField()

        class Meta:
            table_name = "gateway_last_post"

    class GatewayMessage(Base):
        """A gateway message id already taken in (hashed: it is the gateway's, not ours to keep), with
        the key of the content it first carried (``messages.content_key``; NULL: taken before
        contents were kept)."""

        gateway = TextField()
        key = TextField()
        at = DoubleField(index=True)
        content = TextField(null=True)

        class Meta:
            table_name = "gateway_messages"
            primary_key = CompositeKey("gateway", "key")

    return SimpleNamespace(Gateway=Gateway, GatewayCount=GatewayCount, GatewayLast=GatewayLast,
                           GatewayMessage=GatewayMessage)


def gateway_models(db: Database) -> SimpleNamespace:
    return bound_models(db, _bind)


def migrate_v21(db: Database, m) -> None:
    g = gateway_models(db)
    db.create_tables([g.Gateway, g.GatewayCount, g.GatewayLast, g.GatewayMessage])


def migrate_message_contents(db: Database, m) -> None:
    """Each gateway message id keeps the key of the content it first carried; the ids already taken
    have none (NULL). A store made since the model had the column already has it."""
    if "content" not in {c.name for c in db.get_columns("gateway_messages")}:
        db.execute_sql("ALTER TABLE gateway_messages ADD COLUMN content TEXT")


def source_label(name: str) -> str:
    """The gateway's path label in the per-path counts and the ledger's ``source``."""
    return f"gw_{name}"


# -- the per-gateway tables' writes (the committer's and the spool's, in the ingest's transaction) --
def known_messages(db: Database, name: str, keys: list[str]) -> dict[str, str | None]:
    """Of the message keys among ``keys`` already taken in for gateway ``name``: key -> the key of the
    content it first carried (None: taken before contents were kept). Raw SQL on the primary key's
    index (gateway first, then key), in slices of 400."""
    known: dict[str, str | None] = {}
    keys = sorted(set(keys))
    for k in range(0, len(keys), 400):
        part = keys[k:k + 400]
        marks = ", ".join([db.param] * len(part))
        cursor = db.execute_sql(f"SELECT key, content FROM gateway_messages WHERE gateway = {db.param} "
                                f"AND key IN ({marks})", [name, *part])
        known.update(cursor.fetchall())
    return known


def record_messages(db: Database, rows: list[tuple[str, str, str | None, float]]) -> None:
    """Remember ``(gateway, key, content, at)``: a message id taken in and the content it carried (a later
    post of the same is a webhook retry). An id on record with no content gets this one."""
    for k in range(0, len(rows), 250):
        part = rows[k:k + 250]
        values = ", ".join([f"({db.param}, {db.param}, {db.param}, {db.param})"] * len(part))
        db.execute_sql(f"INSERT INTO gateway_messages (gateway, key, content, at) VALUES {values} "
                       "ON CONFLICT (gateway, key) DO UPDATE SET content = excluded.content "
                       "WHERE gateway_messages.content IS NULL", [v for row in part for v in row])


def bump_counts(db: Database, counts: Mapping[tuple[str, str], int]) -> None:
    """Add ``counts`` (``(gateway, what) -> n``) to the per-gateway counts, in one statement."""
    rows = [(name, what, n) for (name, what), n in sorted(counts.items()) if n]
    if not rows:
        return
    values = ", ".join([f"({db.param}, {db.param}, {db.param})"] * len(rows))
    db.execute_sql(f"INSERT INTO gateway_counts (gateway, what, count) VALUES {values} ON CONFLICT "
                   "(gateway, what) DO UPDATE SET count = gateway_counts.count + excluded.count",
                   [v for row in rows for v in row])


def add_account(db: Database, payload: dict, *, at: float, by: str, seq: int) -> None:
    """Write the account a signed ``gateway.add`` payload describes (directly or once approved)."""
    gateway_models(db).Gateway.create(
        name=payload["name"], kind=payload["kind"], token_hash=payload["token_hash"],
        secret_file=payload["secret_file"], public_url=payload["public_url"], reply=payload["reply"],
        added_at=at, added_by=by, added_seq=seq)


def retire_account(db: Database, name: str, *, at: float, seq: int) -> None:
    G = gateway_models(db).Gateway
    G.update(retired_at=at, retired_seq=seq).where(G.name == name).execute()
