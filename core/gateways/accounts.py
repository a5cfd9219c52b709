"""Gateway accounts: who may write the ledger over HTTP, added and retired by signed operator actions.

``gateway add`` decides who may write the ledger, so it is signed like an
operator change: the account row and its ``gateway.add`` audit entry commit
together, and ``audit verify`` reconciles the table with the log
(``check_gateways``, which ``core.signing.reconcile`` runs; the signed add and
retire themselves are in ``core.gateways.signed``, above signing). The path's
token is random (192 bits), shown once and stored only as its SHA-256; a
gateway's secret (signing key, auth token, webhook secret) stays in the file
named by ``--secret-file`` and is never copied into the store.

The per-gateway counts (posts accepted, webhook retries, reused message ids,
refused posts, the last post) and the gateway message ids already taken (with
the content each first carried) live in tables of their own, written by the listener in the ingest's transaction; they are not signed.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import re
import stat
import weakref
from types import SimpleNamespace
from typing import Mapping
from urllib.parse import urlsplit

from peewee import BigIntegerField, CompositeKey, Database, DoubleField, IntegerField, Model, TextField

from core.rules.text import escape_text

from .adapters import KINDS

GATEWAY_ADD = "gateway.add"
GATEWAY_RETIRE = "gateway.retire"
NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,12}")  # the path label is gw_<name>, within 16 characters
TOKEN_BYTES = 24
SECRET_MAX = 4096
REPLIES = ("END", "CON")
# Counts kept per gateway (``gateway_counts.what``).
COUNTS = ("posts", "messages", "webhook_retries", "reused_ids", "ignored", "spooled", "refused_404",
          "refused_403", "refused_413", "refused_429", "refused_405")

_BOUND: "weakref.WeakKeyDictionary[Database, SimpleNamespace]" = weakref.WeakKeyDictionary()


class GatewayError(ValueError):
    """A gateway command that cannot be done; the message is for the operator."""


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
    bound = _BOUND.get(db)
    if bound is None:
        bound = _BOUND[db] = _bind(db)
    return bound


def migrate_v21(db: Database, m) -> None:
    g = gateway_models(db)
    db.create_tables([g.Gateway, g.GatewayCount, g.GatewayLast, g.GatewayMessage])


def migrate_message_contents(db: Database, m) -> None:
    """Each gateway message id keeps the key of the content it first carried; the ids already taken
    have none (NULL). A store made since the model had the column already has it."""
    if "content" not in {c.name for c in db.get_columns("gateway_messages")}:
        db.execute_sql("ALTER TABLE gateway_messages ADD COLUMN content TEXT")


# -- small helpers ----------------------------------------------------------------------
def source_label(name: str) -> str:
    """The gateway's path label in the per-path counts and the ledger's ``source``."""
    return f"gw_{name}"


def check_name(name: object) -> str:
    text = str(name)
    if not NAME_RE.fullmatch(text):
        raise GatewayError("a gateway name is 1-13 lower-case letters, digits or '_', starting with a letter")
    return text


def check_kind(kind: object) -> str:
    if kind not in KINDS:
        raise GatewayError(f"unknown gateway kind {escape_text(str(kind), 40)}; one of: {', '.join(KINDS)}")
    return str(kind)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def path_of(name: str, token: str) -> str:
    return f"/in/{name}/{token}"


def check_public_url(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise GatewayError("--public-url is the base the gateway posts to, such as https://receiver.example.org")
    return url.rstrip("/")


def read_secret(path: str) -> bytes:
    """The secret: the first line of a file only its owner can read (like a passphrase file)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            raise  # out of open files: the post is answered 503 and re-sent, not refused as unsigned
        raise GatewayError(f"cannot read the secret file {escape_text(path, 200)}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise GatewayError(f"the secret file {escape_text(path, 200)} is not a regular file")
        if info.st_mode & 0o077:
            raise GatewayError(f"the secret file {escape_text(path, 200)} is open to others "
                               f"(mode {info.st_mode & 0o777:04o}); run: chmod 600 {path}")
        data = os.read(fd, SECRET_MAX + 1)
    finally:
        os.close(fd)
    line = data.split(b"\n", 1)[0].rstrip(b"\r")
    if not line or len(data) > SECRET_MAX:
        raise GatewayError(f"the secret file {escape_text(path, 200)} has no secret on its first line")
    return line


# -- reading ---------------------------------------------------------------------------------
def find(db: Database, name: str, token: str):
    """The active account the path ``/in/name/token`` names, or None (unknown, wrong token, retired)."""
    if not NAME_RE.fullmatch(name):
        return None
    row = gateway_models(db).Gateway.get_or_none(gateway_models(db).Gateway.name == name)
    if row is None or row.retired_at is not None:
        return None
    if not hmac.compare_digest(row.token_hash, token_hash(token)):
        return None
    return row


def counts(db: Database) -> dict[str, dict]:
    """Each gateway's counts, kind, who added it and its last post (``gateway list``, ``status --json``)."""
    g = gateway_models(db)
    out: dict[str, dict] = {}
    for row in g.Gateway.select().order_by(g.Gateway.name):
        out[row.name] = {"kind": row.kind, "source": source_label(row.name), "added_by": row.added_by,
                         "added_at": row.added_at, "retired_at": row.retired_at, "last_post": None,
                         **{k: 0 for k in COUNTS}}
    for name, what, n in g.GatewayCount.select(g.GatewayCount.gateway, g.GatewayCount.what,
                                               g.GatewayCount.count).tuples():
        if name in out:
            out[name][what] = n
    for name, at in g.GatewayLast.select(g.GatewayLast.gateway, g.GatewayLast.at).tuples():
        if name in out:
            out[name]["last_post"] = at
    for info in out.values():
        info["refused"] = sum(info[k] for k in COUNTS if k.startswith("refused_"))
    return out


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


# -- reconciling with the signed log ------------------------------------------------------------
def check_gateways(receiver, entries) -> list[str]:
    """Every gateway row must be the effect of its signed entries, and every entry's effect there."""
    out: list[str] = []
    expected: dict[str, dict] = {}
    for e in entries:
        p = e["payload"] if isinstance(e["payload"], dict) else {}
        name = p.get("name")
        if not isinstance(name, str):
            out.append(f"audit entry #{e['seq']} ({e['action']}): its signed payload cannot be read")
            continue
        if e["action"] == GATEWAY_ADD:
            expected[name] = {"kind": p.get("kind"), "token_hash": p.get("token_hash"),
                              "secret_file": p.get("secret_file"), "public_url": p.get("public_url"),
                              "reply": p.get("reply"), "added_at": e["at"], "added_by": e["operator"],
                              "added_seq": e["seq"], "retired_at": None, "retired_seq": None, "seq": e["seq"]}
        elif e["action"] == GATEWAY_RETIRE and name in expected:
            expected[name].update(retired_at=e["at"], retired_seq=e["seq"], seq=e["seq"])
    G = gateway_models(receiver.db).Gateway
    for row in G.select().order_by(G.name).dicts():
        where = f"gateway {escape_text(row['name'], 40)}"
        want = expected.pop(row["name"], None)
        if want is None:
            out.append(f"{where}: no signed entry added this gateway")
            continue
        for field in ("kind", "token_hash", "secret_file", "public_url", "reply", "added_at", "added_by",
                      "added_seq", "retired_at", "retired_seq"):
            if row[field] != want[field]:
                out.append(f"{where}: {field} is {escape_text(str(row[field]), 40)}, "
                           f"entry #{want['seq']} signed {escape_text(str(want[field]), 40)}")
    for name, want in sorted(expected.items()):
        out.append(f"gateway {escape_text(name, 40)}: missing, although entry #{want['seq']} added it")
    return out


def metric_families(db: Database):
    """The per-gateway counts as Prometheus families (``ussd_gateway_posts{gateway, what}``), for the
    ``.prom`` file beside the per-path frame counts (``ussd_frames{path="gw_<name>"}``)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    posts = CounterMetricFamily("ussd_gateway_posts", "gateway posts by gateway and what became of them "
                                "(posts accepted, messages, webhook_retries, reused_ids, ignored, spooled, "
                                "refused_<status>)",
                                labels=["gateway", "what"])
    last = GaugeMetricFamily("ussd_gateway_last_post_timestamp_seconds", "the gateway's last accepted post (0: none)",
                             labels=["gateway"])
    for name, info in counts(db).items():
        for what in COUNTS:
            posts.add_metric([name, what], float(info[what]))
        last.add_metric([name], float(info["last_post"] or 0))
    return [posts, last]


class MetricsCollector:
    """A one-shot prometheus collector over the gateways' counts."""

    def __init__(self, db: Database):
        self.families = metric_families(db)

    def collect(self):
        yield from self.families
