"""The gateways' group commit: the posts waiting at one moment are decided and committed in ONE transaction.

Its own module because it is the listener's other thread, with its own store
connection, and holds all the SQL of a post (accounts re-checked, webhook
retries and reused message ids (``messages``), ``Receiver.ingest_many``, counts); the HTTP side only queues posts and
awaits their outcomes. With the store unavailable it hands the posts to ``spool``.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter

from core.rules.frame import Unreadable
from core.rules.gateway_messages import NEW, content_key, judge
from core.rules.text import one_line
from core.store import gateway_tables
from core.store.commit_hold import hold_after_commit
from core.store.database import write_transaction
from core.store.ledger import HANDOVER_FRAMES
from core.store.outbox import record as record_event
from core.receiver import Receiver

from .door import OUT_OF_FILES
from .posts import Outcome, Post, message_key
from .spool import spool

log = logging.getLogger("ussd.gateways")

GROUP_FRAMES = HANDOVER_FRAMES  # frames per group commit at most: the posts already waiting, one ingest call
IDLE_FLUSH = 1.0  # seconds an idle committer waits before writing refused counts
HOLD_LABEL = "gateway"  # the hold-after-commit hook's label (tests pause between commit and answer)


class Committer:
    """The group-commit thread: decides waiting posts together, commits once, then answers them."""

    def __init__(self, listener):  # the owning Listener (not imported: it imports this module)
        self.listener = listener
        self.queue: queue.Queue = queue.Queue()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="gateway-commit", daemon=True)
        self.receiver: Receiver | None = None

    def start(self) -> None:
        self.receiver = Receiver(self.listener.store_target)
        self.thread.start()

    def close(self, timeout: float = 10.0) -> None:
        self.stop.set()
        self.queue.put(None)
        self.thread.join(timeout)
        if self.receiver is not None:
            self.receiver.close()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                first = self.queue.get(timeout=IDLE_FLUSH)
            except queue.Empty:
                self._flush_refused()
                continue
            if first is None:
                continue
            group, frames = [first], sum(len(m.items) for m in first.messages)
            while frames < GROUP_FRAMES:
                try:
                    more = self.queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    continue
                group.append(more)
                frames += sum(len(m.items) for m in more.messages)
            try:
                outcomes = self._commit(group)
            except Exception as exc:  # noqa: BLE001 - every waiting post still gets an answer
                log.error("gateway commit failed: %s", one_line(exc), exc_info=True)
                outcomes = [Outcome("failed") for _ in group]
            self.listener.answer(group, outcomes)
        left = self._drain()
        self.listener.answer(left, [Outcome("failed") for _ in left])
        self._flush_refused()  # the last counts, before the connection closes

    def _drain(self) -> list:
        out = []
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                return [p for p in out if p is not None]
            out.append(item)

    # -- the transaction ------------------------------------------------------------------
    def _commit(self, group: list[Post]) -> list[Outcome]:
        """Each post's outcome, once its frames are committed (or spooled); the caller answers them."""
        listener = self.listener
        r = self.receiver
        refused, alerts = listener.take_refused()
        try:
            with write_transaction(r.db):
                outcomes = self._decide_and_write(r, group, refused, alerts)
        except Exception as exc:  # noqa: BLE001 - the store is unavailable: the inbox keeps the frames
            listener.give_back_refused(refused, alerts)
            log.warning("gateway posts could not be committed (%s); spooling them into the inbox", one_line(exc))
            return self._spool_or_fail(group)
        listener.accounts_seen(self._accounts)
        hold_after_commit(HOLD_LABEL, len(group), self.stop)
        return outcomes

    def _decide_and_write(self, r: Receiver, group: list[Post], refused: Counter, alerts: list) -> list[Outcome]:
        """Within the commit's transaction. Raw SQL with few statements: the committer shares the
        GIL with the server thread, and every statement hands it over and waits to get it back."""
        db = r.db
        now = time.time()
        g = gateway_tables.gateway_models(db)
        self._accounts = {row.name: row for row in g.Gateway.select()}
        live = []
        outcomes: list[Outcome | None] = [None] * len(group)
        for i, post in enumerate(group):
            row = self._accounts.get(post.name)
            if row is None or row.retired_at is not None or row.token_hash != post.token_hash:
                outcomes[i] = Outcome("gone")  # retired while the post waited: nothing taken in
            else:
                live.append(i)
        # Gateway message ids already taken: a webhook retry when the content is the same (its frames are
        # not offered again), a reused id when it is not (offered like a new message).
        wanted: dict[str, set[str]] = {}
        for i in live:
            for m in group[i].messages:
                if m.gateway_id is not None:
                    wanted.setdefault(group[i].name, set()).add(message_key(m.gateway_id))
        known = {name: gateway_tables.known_messages(db, name, sorted(keys)) for name, keys in sorted(wanted.items())}
        counts: Counter = Counter(refused)
        new_keys: list[tuple[str, str, str | None, float]] = []
        by_source: dict[str, list] = {}
        for i in live:
            post = group[i]
            counts[(post.name, "ignored" if post.ignored else "posts")] += 1
            ids: list[str] = []
            for msg in post.messages:
                verdict = NEW
                if msg.gateway_id is not None:
                    key, content = message_key(msg.gateway_id), content_key(msg.items)
                    verdict = judge(known[post.name], key, content)
                    if verdict.record:
                        new_keys.append((post.name, key, content, now))
                # The answer names the frames offered now, or by this same message the first time.
                ids.extend(fid for fid, text in msg.items if isinstance(fid, str) and not isinstance(text, Unreadable))
                for what in verdict.counts:
                    counts[(post.name, what)] += 1
                if verdict.offer:
                    by_source.setdefault(gateway_tables.source_label(post.name), []).extend(msg.items)
            outcomes[i] = Outcome("taken", ids)
        for source, items in by_source.items():
            if items:
                r.ingest_many(items, now=now, source=source)
        gateway_tables.record_messages(db, new_keys)
        gateway_tables.bump_counts(db, counts)
        names = sorted({group[i].name for i in live})
        if names:
            values = ", ".join([f"({db.param}, {db.param})"] * len(names))
            db.execute_sql(f"INSERT INTO gateway_last_post (gateway, at) VALUES {values} "
                           "ON CONFLICT (gateway) DO UPDATE SET at = excluded.at",
                           [v for name in names for v in (name, now)])
        for event in alerts:
            record_event(db, event, at=now)
        return outcomes

    def _flush_refused(self) -> None:
        refused, alerts = self.listener.take_refused()
        if not refused and not alerts:
            return
        r = self.receiver
        try:
            with write_transaction(r.db):
                gateway_tables.bump_counts(r.db, refused)
                for event in alerts:
                    record_event(r.db, event)
        except Exception as exc:  # noqa: BLE001 - kept for the next commit
            self.listener.give_back_refused(refused, alerts)
            log.debug("refused-post counts not written yet: %s", one_line(exc))

    # -- the store unavailable ------------------------------------------------------------
    def _spool_or_fail(self, group: list[Post]) -> list[Outcome]:
        live = [p for p in group if p.name in self.listener.active_names()]
        try:
            written, retries = spool(self.listener.home, live)
        except OSError as exc:
            if exc.errno in OUT_OF_FILES:
                self.listener.out_of_files(exc)
            else:
                log.error("gateway posts could not be spooled into the inbox either: %s", one_line(exc))
            return [Outcome("failed") for _ in group]
        log.info("%d gateway posts spooled into the inbox as %s", len(live), ", ".join(written) or "nothing")
        for (name, what), n in retries.items():
            self.listener.count_refused(name, what, n)
        outcomes = []
        for post in group:
            if post in live:
                self.listener.count_refused(post.name, "spooled")
                ids = [fid for m in post.messages for fid, t in m.items
                       if isinstance(fid, str) and not isinstance(t, Unreadable)]
                outcomes.append(Outcome("spooled", ids))
            else:
                outcomes.append(Outcome("gone"))
        return outcomes
