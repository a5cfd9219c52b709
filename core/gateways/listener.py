"""The gateways' HTTP listener: ``POST /in/NAME/TOKEN``, answered only after the frames are committed.

One ``aiohttp.web`` server on its own thread and event loop takes the posts;
one committer thread, with its own store connection, decides and commits the
posts waiting at that moment in ONE transaction (group commit) through
``Receiver.ingest_many``, the merge point every delivery path shares, and then
releases their answers. So a 2xx means committed: a ``kill -9`` right after it
loses nothing, and a gateway that never heard the 2xx re-sends harmlessly (the
frame id in the text is the dedup key).

In front of the server, the door (``door``) holds at most ``max_connections``
connections, ``max_connections_per_peer`` from one address, and closes any
other at once; a connection has ``header_timeout`` seconds for a request's
headers and ``body_timeout`` for its body (408, and the connection closes).
Running out of open files is a fault that clears (``[gateways]``, ``door``).

Answers: 404 an unknown or retired path (re-checked inside the commit, so a
gateway retired mid-post takes nothing in), 405 anything but POST, 413 a body
over 64 KiB, 429 with ``Retry-After`` over the gateway's rate, 403 a bad or
missing signature (and a fault alert through the outbox, at most one per
gateway per ``ALERT_EVERY``), 200 otherwise, also for an authentic post that
holds no frame (its reject is recorded: a 4xx would start a retry storm).
With the store unavailable (locked past the busy timeout, read-only, full),
a post's frames, without phone numbers, go into the inbox as a JSON-lines file
(temporary name, fsync, rename, fsync of the folder) for the inbox to take in
when the store is back, and the post gets 200; if that fails too, 503 with
``Retry-After``.

Counted per gateway (``gateway_counts``): posts accepted, messages, webhook
retries (a gateway message id already taken: its frames are not offered
again, so the ledger's per-path duplicates are the field's re-sends alone),
ignored events, spooled posts and refused posts by status. Logged (``tally``):
each gateway's first post, then a line a minute per gateway with its answers
by status and the slowest; never the path's token, a query string, a body or
a phone number.

This module is the HTTP side; the group commit is in ``committer``, the inbox
fallback in ``spool``, the rate limit in ``ratelimit``, the records in ``posts``,
what the log says of posts in ``tally``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import fcntl
import logging
import os
import secrets
import ssl
import threading
import time
from collections import Counter

from core.home import Home, open_private
from core.i18n import N_, MarkedError
from core.rules import events
from core.rules.text import one_line
from core.receiver import Receiver

from . import accounts
from .adapters import SKEW_LOGGED, Request
from .kinds import KINDS
from .committer import Committer
from .config import GatewaysConfig
from .door import OUT_OF_FILES, Door, Gate, fit_file_limit
from .posts import Post
from .ratelimit import Bucket
from .tally import NO_GATEWAY, SUMMARY_EVERY, PostTally

log = logging.getLogger("ussd.gateways")

MAX_BODY = 64 * 1024
MAX_HEADERS = 64  # header lines of at most 8 KiB each (aiohttp's own line limit): a request's headers stay small
ALERT_EVERY = 300.0  # seconds between two bad-signature alerts of one gateway
RETRY_AFTER_BUSY = 30  # seconds, when nothing could keep a post (store and inbox both failed)
RELOAD_EVERY = 0.5  # seconds between two account reloads caused by an unknown name


class ListenerError(MarkedError, ValueError):
    """The listener cannot start (address in use, bad TLS files, another listener on this home)."""


class Listener:
    """``watch --listen``: the server thread and the committer; ``start`` binds or raises ``ListenerError``."""

    def __init__(self, home: Home, store_target: str, config: GatewaysConfig, faults=None):
        """``faults``: the inbox service's faults in force (``core.inbox.faults``), where running out
        of open files is told and cleared; without it, the log alone says so."""
        self.home = home
        self.store_target = store_target
        self.config = config
        self.faults = faults
        self.committer = Committer(self)
        self._accounts: dict[str, tuple] = {}  # name -> (kind, token_hash, secret_file, public_url, reply)
        self._loaded_at = 0.0
        self._refused: Counter = Counter()
        self._alerts: list = []
        self._alerted: dict[str, float] = {}
        self._lock = threading.Lock()
        self._reloading = threading.Lock()
        self._buckets: dict[str, Bucket] = {}
        self._tally = PostTally()
        self._summarised_at = time.monotonic()
        self._summary_timer: asyncio.TimerHandle | None = None
        self._secrets: dict[str, tuple] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner = None
        self._gate: Gate | None = None
        self._thread: threading.Thread | None = None
        self._lock_fd: int | None = None
        self.address: tuple[str, int] | None = None

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> "Listener":
        short = fit_file_limit(self.config.max_connections)
        if short is not None:
            raise ListenerError(short[0], **short[1])
        self._take_home_lock()
        try:
            self.committer.start()
            self._reload()
            ready = concurrent.futures.Future()
            self._thread = threading.Thread(target=self._serve, args=(ready,), name="gateway-listen", daemon=True)
            self._thread.start()
            ready.result(timeout=60)
        except BaseException:
            self.stop()
            raise
        scheme = "https" if self.config.tls_cert else "http"
        log.info("gateways: listening on %s://%s:%d/in/", scheme, *self.address)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed() and self._thread is not None and self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout)
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout)
        self._loop = None
        if self.committer.thread.is_alive() or self.committer.receiver is not None:
            self.committer.close(timeout)
            self.committer.receiver = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _take_home_lock(self) -> None:
        path = self.home.root / ".gateways.lock"
        fd = open_private(path, os.O_RDWR | os.O_CREAT)  # never through a planted link
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise ListenerError(N_("another process already listens for gateways on this home (one listener per home)"))
        self._lock_fd = fd

    def _ssl(self):
        if not self.config.tls_cert:
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(self.config.tls_cert, self.config.tls_key)
        except (OSError, ssl.SSLError) as exc:
            raise ListenerError(N_("[gateways] tls_cert / tls_key cannot be loaded: %(reason)s"), reason=one_line(exc)) from None
        return context

    def _serve(self, ready: concurrent.futures.Future) -> None:
        from aiohttp import web

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        try:
            config = self.config
            app = web.Application(client_max_size=MAX_BODY + 1)
            app.router.add_route("*", "/{tail:.*}", self._handle)
            # aiohttp's keep-alive timer runs from the connection's start and from each answer, and closes
            # a connection that has not sent a whole request's headers when it fires: the header timeout.
            runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                   keepalive_timeout=config.header_timeout, lingering_time=config.header_timeout,
                                   max_headers=MAX_HEADERS)
            loop.run_until_complete(runner.setup())
            self._gate = Gate(Door(config.max_connections, config.max_connections_per_peer), runner.server,
                              self._ssl(), config.header_timeout, self.faults)
            host, port = config.host, config.port
            try:
                self.address = self._gate.listen(loop, host, port)
            except OSError as exc:
                raise ListenerError(N_("cannot listen on %(host)s:%(port)s: %(reason)s"), host=host, port=port,
                                    reason=exc.strerror or one_line(exc)) from None
            self._runner = runner
        except BaseException as exc:  # noqa: BLE001 - told to start(), which raises it
            self._loop = None
            loop.close()
            ready.set_exception(exc)
            return
        ready.set_result(True)
        self._summary_timer = loop.call_later(SUMMARY_EVERY, self._summarise, True)
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _shutdown(self) -> None:
        if self._gate is not None:
            self._gate.stop_accepting()  # no new connection; those held are answered, then closed
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._gate is not None:
            self._gate.abort_all()
        if self._summary_timer is not None:
            self._summary_timer.cancel()
            self._summary_timer = None
        self._summarise(False)  # what came since the last summary is not lost with the stop

    def answer(self, posts: list[Post], outcomes: list) -> None:
        """The committer's answers to a group of posts, handed to the listener's loop in one wake-up
        (a future per post, each waking the loop, cost more than the rest of the hand-over)."""
        loop = self._loop
        if not posts or loop is None:
            return
        try:
            loop.call_soon_threadsafe(_answer_all, list(zip(posts, outcomes)))
        except RuntimeError:  # the loop closed meanwhile (the listener stopped): nobody waits any more
            pass

    def _summarise(self, again: bool) -> None:
        """Log the posts since the last summary, one line per gateway (on the listener's loop)."""
        now = time.monotonic()
        for line in self._tally.summary(now - self._summarised_at):
            log.info("%s", line)
        turned_away = self._gate.door.summary(now - self._summarised_at) if self._gate is not None else None
        if turned_away is not None:
            log.warning("%s", turned_away)
        self._summarised_at = now
        if again and self._loop is not None:
            self._summary_timer = self._loop.call_later(SUMMARY_EVERY, self._summarise, True)

    # -- accounts and secrets -----------------------------------------------------------
    def _reload(self) -> None:
        """The accounts from the store (in the caller's thread and its own connection)."""
        r = self.committer.receiver
        if r is None:
            return
        G = accounts.gateway_models(r.db).Gateway
        rows = list(G.select())
        self.accounts_seen({row.name: row for row in rows})

    def accounts_seen(self, rows: dict) -> None:
        fresh = {name: (row.kind, row.token_hash, row.secret_file, row.public_url, row.reply)
                 for name, row in rows.items() if row.retired_at is None}
        with self._lock:
            self._accounts = fresh
            self._loaded_at = time.monotonic()

    def active_names(self) -> set[str]:
        with self._lock:
            return set(self._accounts)

    async def _account(self, name: str, token: str):
        with self._lock:
            found = self._accounts.get(name)
            stale = time.monotonic() - self._loaded_at > RELOAD_EVERY
        if found is None and stale and accounts.NAME_RE.fullmatch(name):
            try:
                await asyncio.get_running_loop().run_in_executor(None, self._reload_in_thread)
            except Exception as exc:  # noqa: BLE001 - an unreadable store: the cached accounts stand
                log.debug("gateway accounts not reloaded: %s", one_line(exc))
            with self._lock:
                found = self._accounts.get(name)
        if found is None:
            return None
        if not secrets.compare_digest(found[1], accounts.token_hash(token)):
            return None
        return found

    def _reload_in_thread(self) -> None:
        if not self._reloading.acquire(blocking=False):
            return  # one reload at a time: a flood of unknown names costs one read
        try:
            self._reload_with_own_connection()
        finally:
            self._reloading.release()

    def _reload_with_own_connection(self) -> None:
        with Receiver(self.store_target) as r:
            G = accounts.gateway_models(r.db).Gateway
            self.accounts_seen({row.name: row for row in G.select()})

    def _secret(self, path: str | None) -> bytes | None:
        if not path:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        cached = self._secrets.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            secret = accounts.read_secret(path)
        except accounts.GatewayError as exc:
            log.warning("%s", exc)
            return None
        self._secrets[path] = (key, secret)
        return secret

    def out_of_files(self, exc: OSError) -> None:
        """The open-file limit met (from any thread): a fault, cleared by the next connection accepted."""
        if self._gate is not None:
            self._gate.ran_out_of_files(exc)
        else:
            log.warning("gateways listener: out of open files: %s", one_line(exc))

    # -- refused posts (counted in the next commit) --------------------------------------
    def count_refused(self, name: str, what: str, n: int = 1) -> None:
        with self._lock:
            self._refused[(name, what)] += n

    def _alert(self, name: str, why: str) -> None:
        now = time.time()
        with self._lock:
            if now - self._alerted.get(name, 0.0) < ALERT_EVERY:
                return
            self._alerted[name] = now
            self._alerts.append(events.fault(
                f"gateway {name}", f"gateway {name}: a post was refused ({why}); nothing was taken in. "
                                   "Check the gateway's secret, or who else knows its path", now))

    def take_refused(self) -> tuple[Counter, list]:
        with self._lock:
            refused, alerts = self._refused, self._alerts
            self._refused, self._alerts = Counter(), []
        return refused, alerts

    def give_back_refused(self, refused: Counter, alerts: list) -> None:
        with self._lock:
            self._refused.update(refused)
            self._alerts[:0] = alerts

    # -- one post -------------------------------------------------------------------------
    async def _handle(self, request):
        from aiohttp import web

        started = time.monotonic()
        name = NO_GATEWAY
        try:
            response, name = await self._answer(request)
        except OSError as exc:
            if exc.errno not in OUT_OF_FILES:
                log.error("gateway post failed: %s", one_line(exc), exc_info=True)
            else:
                self.out_of_files(exc)
            response = web.Response(status=503, headers={"Retry-After": str(RETRY_AFTER_BUSY)})
        except Exception as exc:  # noqa: BLE001 - one bad post must not take the listener down
            log.error("gateway post failed: %s", one_line(exc), exc_info=True)
            response = web.Response(status=503, headers={"Retry-After": str(RETRY_AFTER_BUSY)})
        first = self._tally.add(name, response.status, (time.monotonic() - started) * 1000)
        if first is not None:
            log.info("%s", first)
        return response

    async def _answer(self, request):
        from aiohttp import web

        parts = request.path.split("/")
        named = len(parts) == 4 and parts[0] == "" and parts[1] == "in"
        account = await self._account(parts[2], parts[3]) if named else None
        name = parts[2] if account is not None else NO_GATEWAY
        if request.method != "POST":
            if account is not None:
                self.count_refused(name, "refused_405")
            return web.Response(status=405, headers={"Allow": "POST"}), name
        if account is None:
            return web.Response(status=404), name
        kind_name, token_digest, secret_file, public_url, ussd_reply = account
        if request.content_length is not None and request.content_length > MAX_BODY:
            self.count_refused(name, "refused_413")
            return web.Response(status=413), name
        body = await _read_body(request, self.config.body_timeout)
        if body is None:  # not sent within body_timeout: the connection goes with the answer
            return web.Response(status=408, headers={"Connection": "close"}), name
        if len(body) > MAX_BODY:
            self.count_refused(name, "refused_413")
            return web.Response(status=413), name
        bucket = self._buckets.get(name)
        if bucket is None:
            bucket = self._buckets[name] = Bucket(self.config.rate, self.config.burst)
        wait = bucket.take()
        if wait:
            self.count_refused(name, "refused_429")
            return web.Response(status=429, headers={"Retry-After": str(max(1, int(wait + 0.999)))}), name
        req = Request({k.lower(): v for k, v in request.headers.items()}, body, request.path)
        url = (public_url + request.path) if public_url else None
        kind = KINDS[kind_name]
        check = kind.verify(req, self._secret(secret_file), url, None)
        if not check.ok:
            self.count_refused(name, "refused_403")
            self._alert(name, check.why)
            log.warning("gateway %s: post refused, %s", name, check.why)
            return web.Response(status=403), name
        if check.skew is not None and abs(check.skew) > SKEW_LOGGED:
            log.info("gateway %s: the sender's clock is %+.0f s off (taken anyway)", name, check.skew)
        parsed = kind.parse(req)
        post = Post(name, kind_name, token_digest, parsed.messages, parsed.ignored is not None and not parsed.messages)
        post.waiter = asyncio.get_running_loop().create_future()
        self.committer.queue.put(post)
        outcome = await post.waiter
        if outcome.status == "gone":
            return web.Response(status=404), name
        if outcome.status == "failed":
            told = kind.reply(None, ussd_reply)  # only a kind that can tell its sender answers 200
            if told is not None:
                content_type, text = told
                return web.Response(status=200, body=text, content_type=content_type), name
            return web.Response(status=503, headers={"Retry-After": str(RETRY_AFTER_BUSY)}), name
        content_type, text = kind.reply(outcome.frame_ids, ussd_reply)
        return web.Response(status=200, body=text, content_type=content_type), name


async def _read_body(request, deadline: float) -> bytes | None:
    """The body, read to its end or to one byte over ``MAX_BODY``; None when it is not all there within
    ``deadline`` seconds. (One ``read`` returns what has come so far, not the whole body.)"""
    chunks, size = [], 0
    try:
        async with asyncio.timeout(deadline):
            while size <= MAX_BODY:
                chunk = await request.content.read(MAX_BODY + 1 - size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except TimeoutError:
        return None
    return b"".join(chunks)


def _answer_all(pairs: list) -> None:
    """On the listener's loop: wake each post's handler (a post whose client went away has none)."""
    for post, outcome in pairs:
        if post.waiter is not None and not post.waiter.done():
            post.waiter.set_result(outcome)


def start_listener(home: Home, store_target: str, config: GatewaysConfig, faults=None) -> Listener:
    return Listener(home, store_target, config, faults).start()
