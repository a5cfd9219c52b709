"""``serve``'s browser sessions end with it, whichever way it stops.

textual-serve 1.1.3 starts each session as ``/bin/sh -c COMMAND`` and, on shutdown, only asks
the sessions still attached to quit; a session whose quit never arrives (``serve`` killed, or
stopped while the page stays open) was left running without its server. Here:

- the command is ``exec``'d, so the session process is ``serve``'s own child, no shell between;
- each session runs in a process group of its own (``Session``), which ``serve`` ends on its
  way out (``end_sessions``): quit asked, then SIGTERM to the group, then SIGKILL;
- the session itself watches its parent (``exit_with_parent``): when ``serve`` is gone, even
  killed with SIGKILL, the console quits as on SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading

from textual_serve.app_service import AppService

log = logging.getLogger("ussd.serve")

SERVE_PID = "USSD_SERVE_PID"  # serve's pid, in each session's environment
QUIT_WAIT = 10.0  # seconds a session gets to quit when asked, before SIGTERM
TERM_WAIT = 5.0  # seconds after SIGTERM, before SIGKILL
PARENT_POLL = 0.5  # seconds between a session's looks at its parent


class Session(AppService):
    """One browser session's console: textual-serve's ``AppService``, in a process group of its own."""

    async def _open_app_process(self, width: int = 80, height: int = 24):
        self._process = process = await asyncio.create_subprocess_shell(
            self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width=width, height=height),
            start_new_session=True,  # its own group: ended as one, and apart from serve's terminal
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    def signal_group(self, signum: int) -> None:
        if self._process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    async def stop(self) -> None:
        """textual-serve's ``stop`` waits for ever on a console that does not quit; this one ends it."""
        if self._task is not None:
            await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        await self.end()
        if self._task is not None:
            await self._task  # the reader stops at the end of the console's output
            self._task = None

    async def end(self) -> None:
        """Ask the console to quit; then SIGTERM, then SIGKILL its process group, each after a wait."""
        process = self._process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(Exception):  # a pipe already closed: the signals follow
            await self.send_meta({"type": "quit"})
        for wait, then in ((QUIT_WAIT, signal.SIGTERM), (TERM_WAIT, signal.SIGKILL)):
            try:
                await asyncio.wait_for(process.wait(), wait)
                return
            except asyncio.TimeoutError:
                log.warning("serve: session pid %d did not end in %g s; sending %s", process.pid, wait,
                            signal.Signals(then).name)
                self.signal_group(then)
        await process.wait()


async def end_sessions(sessions) -> None:
    """End every session still running, at once (serve's shutdown)."""
    await asyncio.gather(*(session.end() for session in list(sessions)), return_exceptions=True)


def exit_with_parent(expected: int | None = None) -> None:
    """In a session: quit as on SIGTERM once ``serve`` (the parent) is gone.

    Textual's web driver quits the app on SIGTERM; a killed ``serve`` sends nothing, so a
    daemon thread looks at the parent and sends the signal itself when it changed.
    """
    parent = expected if expected is not None else os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(PARENT_POLL)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="exit-with-serve", daemon=True).start()


def serve_pid() -> int | None:
    """The pid of the ``serve`` that started this session, from its environment (None elsewhere)."""
    try:
        return int(os.environ[SERVE_PID])
    except (KeyError, ValueError):
        return None
