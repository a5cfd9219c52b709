"""The console's inbox: started on a thread of its own once the console shows, stopped when it closes.

The first sweep may take a while on a full inbox, so the start never holds up the first screen;
the inbox's threads report verdicts by posting a message, which only asks for a refresh (what
the panels show always comes from the store). ``companions`` (the demo's gateway) start after
the inbox and stop before it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, Callable, Iterable

from textual.message import Message

from core.config import InboxConfig
from core.home import Home
from core.i18n import _
from core.inbox import InboxService
from core.rules.text import said

from .messages import Arrived, RefreshRequest

log = logging.getLogger("ussd.console")


def inbox_service(home: Home, on_verdicts: Callable, config: InboxConfig | None = None,
                  store_target: str | None = None, alerts=None) -> InboxService:
    """The real inbox: watchdog push plus the periodic sweep (docs/rules.md#delivery-one-merge-point-two-paths),
    and alert delivery; settings from config.toml."""
    return InboxService(home, store_target=store_target, config=config, on_verdicts=on_verdicts, role="console",
                        alerts=alerts)


class InboxLifecycle:
    """``factory=None``: the console runs without an inbox (read-only views)."""

    def __init__(self, app, factory: Callable[[Home, Callable], Any] | None, companions: Iterable[Any] = ()):
        self.app = app
        self.factory = factory
        self.companions = list(companions)
        self.service: Any = None
        self._settled = threading.Event()  # the start finished, one way or the other
        self._asked = False  # the start was asked for (the main screen came up)

    def start(self) -> None:
        if self.factory is not None:
            self._asked = True
            self.app.run_worker(self._start, thread=True, group="inbox", exit_on_error=False)

    def _start(self) -> None:
        try:
            service = self.factory(self.app.home, self._verdicts)
            service.start()
            self.service = service
            for companion in self.companions:
                companion.start()
        except Exception as exc:
            log.exception("inbox did not start")
            self.app.notify(_("The inbox did not start: %(error)s", error=said(exc, 160)),
                            title=_("Inbox"), severity="error", markup=False, timeout=20)
            return
        finally:
            self._settled.set()
        self.post(RefreshRequest(force=True))

    def post(self, message: Message) -> None:
        """Thread-safe and never blocking, unlike ``call_from_thread``, which could wait
        forever on a console that is shutting down while the inbox stops."""
        try:
            self.app.post_message(message)
        except RuntimeError:  # the event loop has already closed: the console is exiting
            pass

    def _verdicts(self, verdicts: list, result: Any) -> None:
        """Called on the inbox's threads: hand over to the UI thread and return at once."""
        self.post(Arrived(verdicts, result))

    async def stop(self) -> None:
        """Wait for a start still under way, then stop the companions and the inbox, off the UI thread."""
        if self._asked:
            await asyncio.to_thread(self._settled.wait, 30.0)
        for companion in self.companions:
            await asyncio.to_thread(companion.stop)
        if self.service is not None:
            await asyncio.to_thread(self.service.stop, 5.0)
