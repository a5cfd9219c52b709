"""Gateway accounts: who may write the ledger over HTTP, added and retired by signed operator actions.

``gateway add`` decides who may write the ledger, so it is signed like an
operator change: the account row and its ``gateway.add`` audit entry commit
together, and ``audit verify`` reconciles the table with the log
(``core.signing.gateway_check``; the signed add and retire themselves are in
``core.gateways.signed``, above signing). The path's
token is random (192 bits), shown once and stored only as its SHA-256; a
gateway's secret (signing key, auth token, webhook secret) stays in the file
named by ``--secret-file`` and is never copied into the store.

The per-gateway counts (posts accepted, webhook retries, reused message ids,
refused posts, the last post) and the gateway message ids already taken (with
the content each first carried) live in tables of their own, written by the listener in the ingest's
transaction; they are not signed. The tables and their writes are the store's
(``core.store.gateway_tables``); this module reads them for the commands and the metrics.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlsplit

from peewee import Database

from core.home import PrivateFileError, read_private
from core.i18n import N_, MarkedError
from core.rules.text import escape_text
from core.store.gateway_tables import NAME_RE, gateway_models, source_label

from .kinds import KINDS

TOKEN_BYTES = 24
SECRET_MAX = 4096
REPLIES = ("END", "CON")
# Counts kept per gateway (``gateway_counts.what``).
COUNTS = ("posts", "messages", "webhook_retries", "reused_ids", "ignored", "spooled", "refused_404",
          "refused_403", "refused_413", "refused_429", "refused_405")


class GatewayError(MarkedError, ValueError):
    """A gateway command that cannot be done; the message is for the operator."""


# -- small helpers ----------------------------------------------------------------------
def check_name(name: object) -> str:
    text = str(name)
    if not NAME_RE.fullmatch(text):
        raise GatewayError(N_("a gateway name is 1-13 lower-case letters, digits or '_', starting with a letter"))
    return text


def check_kind(kind: object) -> str:
    if kind not in KINDS:
        raise GatewayError(N_("unknown gateway kind %(kind)s; one of: %(kinds)s"), kind=escape_text(str(kind), 40),
                           kinds=", ".join(KINDS))
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
        raise GatewayError(N_("--public-url is the base the gateway posts to, such as https://receiver.example.org"))
    return url.rstrip("/")


def read_secret(path: str) -> bytes:
    """The secret: the first line of a file only its owner can read (``core.home.read_private``, as
    a key file or a passphrase file)."""
    try:
        data = read_private(path, "the secret file", limit=SECRET_MAX)
    except PrivateFileError as exc:
        raise GatewayError(exc.message, **exc.values) from None
    line = data.split(b"\n", 1)[0].rstrip(b"\r")
    if not line:
        raise GatewayError(N_("the secret file %(path)s has no secret on its first line"), path=escape_text(path, 200))
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
