"""textual-serve's server with a guard in front: who may open the page and its web socket.

textual-serve 1.1.3 answers any request: a page on another site (its web socket is not bound
by the same-origin rule) or a DNS-rebinding name pointing at 127.0.0.1 could drive the console.
Here every request must name, in ``Host``, the address being served (or ``--public-url``'s),
and its ``Origin``, when the browser sends one, must be the page's own; anything else is a 403.
At most ``max_sessions`` consoles run at once (each is a process of its own); one more is a
503 that says so. With a login token (``--public``), no page, web socket or download is
answered before a login: the token is posted once to ``/login`` (never in a URL, so never in
an access log), compared in constant time, and answered with a cookie holding a separate
random value. Each session is a ``console.web.sessions.Session``, ended when ``serve`` stops.
"""

from __future__ import annotations

import asyncio
import hmac
import html
import logging
import secrets
import signal
import sys
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.server import Server, to_int

from core.i18n import _, language, ngettext

from .sessions import Session, end_sessions

log = logging.getLogger("ussd.serve")

COOKIE = "ussd_console_login"
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
FAILED_LOGIN_DELAY = 1.0  # seconds a wrong token waits: guessing gets no quicker by asking often


def _host_port(text: str, default: int | None) -> tuple[str, int | None] | None:
    """``name:port`` (a Host header, a URL's netloc) as (lower-case name, port), or None if malformed."""
    try:
        parts = urlsplit("//" + text)
        name, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not name or parts.username is not None or parts.path or parts.query:
        return None
    return name.lower(), port if port is not None else default


class Allowed:
    """The names this server answers to, as ``Host`` values and as page origins."""

    def __init__(self, host: str, port: int, public_url: str | None):
        names = set(LOOPBACK_NAMES) if host.lower() in LOOPBACK_NAMES or host.startswith("127.") else set()
        if host not in ("0.0.0.0", "::", ""):
            names.add(host.lower().strip("[]"))
        self.hosts = {(name, port) for name in names}
        self.origins = {("http", name, port) for name in names}
        self.bare = {name for name in names if port == 80}  # names a Host header may give without a port
        if public_url:
            parts = urlsplit(public_url)
            default = DEFAULT_PORTS.get(parts.scheme)
            name, given = (parts.hostname or "").lower(), parts.port
            self.hosts.add((name, given or default))
            self.origins.add((parts.scheme, name, given or default))
            if given in (None, default):
                self.bare.add(name)

    def host(self, value: str | None) -> bool:
        if not value:
            return False
        got = _host_port(value, None)
        if got is None:
            return False
        name, port = got
        return name in self.bare if port is None else (name, port) in self.hosts

    def origin(self, value: str) -> bool:
        try:
            parts = urlsplit(value)
            name, port = parts.hostname, parts.port
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not name or parts.path not in ("", "/"):
            return False
        return (parts.scheme, name.lower(), port or DEFAULT_PORTS[parts.scheme]) in self.origins


def _page(title: str, body: str, status: int) -> web.Response:
    text = (f"<!DOCTYPE html><html lang=\"{language()}\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title></head>"
            f"<body style=\"font-family: monospace; background: #0c181f; color: #eee; padding: 2em\">"
            f"<h1>{html.escape(title)}</h1>{body}</body></html>")
    return web.Response(status=status, text=text, content_type="text/html",
                        headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"})


def _marked_up(words: str, n: int | None = None, **code: str) -> str:
    """Our words escaped for the page, each ``code`` placeholder filled with its name in ``<code>``
    and ``%(n)s`` with the count."""
    values = {k: f"<code>{html.escape(v)}</code>" for k, v in code.items()}
    return html.escape(words, quote=False) % (values if n is None else {**values, "n": str(n)})


def full_words(max_sessions: int) -> str:
    """The page's words when every session is taken, in serve's language."""
    return "<p>" + _marked_up(ngettext(
        "This server runs at most %(n)s console session at once, and all are open. Close one (or ask the "
        "administrator to raise %(flag)s / %(key)s), then reload this page.",
        "This server runs at most %(n)s console sessions at once, and all are open. Close one (or ask the "
        "administrator to raise %(flag)s / %(key)s), then reload this page.", max_sessions),
        n=max_sessions, flag="--max-sessions", key="[serve] max_sessions") + "</p>"


def login_words(public_url: str, wrong: bool) -> str:
    """The login form, in serve's language; with a line saying the token given was not it."""
    wrong_words, button = html.escape(_("That is not the login token.")), html.escape(_("Log in"))
    note = f"<p><strong>{wrong_words}</strong></p>" if wrong else ""
    label = _marked_up(_("Login token (printed by %(command)s at start, or in its %(file)s):"),
                       command="ussd-console serve", file="--token-file")
    return (f"{note}<form method=\"post\" action=\"{html.escape(public_url)}/login\">"
            f"<p><label>{label} <input type=\"password\" name=\"token\" autofocus "
            f"autocomplete=\"off\"></label></p><p><button type=\"submit\">{button}</button></p></form>")


class GuardedServer(Server):
    """textual-serve's ``Server`` with the checks of the module docstring in front of every route."""

    def __init__(self, command: str, *, host: str, port: int, public_url: str | None, max_sessions: int,
                 token: str | None, title: str, templates_path, sock=None):
        super().__init__(command, host=host, port=port, title=title,
                         public_url=public_url.rstrip("/") if public_url else None, templates_path=templates_path)
        self.allowed = Allowed(host, port, self.public_url if public_url else None)
        self.max_sessions = max_sessions
        self.token = token
        self.cookie = secrets.token_urlsafe(32)  # what a logged-in browser holds: never the token itself
        self.sessions = 0
        self.live: set[Session] = set()  # the session processes started and not yet ended
        self.sock = sock  # bound by the caller (``serve``), so the port is known before the guard is built

    def initialize_logging(self) -> None:
        """The CLI's logging stays (warnings on stderr); textual-serve's own would add nothing."""

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self.guard)
        app.router.add_get("/login", self.handle_login_page)
        app.router.add_post("/login", self.handle_login)
        return app

    async def on_shutdown(self, app: web.Application) -> None:
        """Before the connections close: every session still running is ended (asked, then signalled)."""
        if self.live:
            log.info("serve: stopping; ending %d session(s)", len(self.live))
        await end_sessions(self.live)

    async def on_startup(self, app: web.Application) -> None:
        """Nothing to say yet: the sockets are bound after the startup signals (see ``serve``)."""

    def announce(self, *_aiohttp_words) -> None:
        print(f"ussd-console: serving the console at {self.public_url}/ (listening on {self.host}:{self.port}; "
              f"at most {self.max_sessions} "
              f"session{'s' if self.max_sessions != 1 else ''} at once; Ctrl-C to stop)", file=sys.stderr, flush=True)

    def serve(self, debug: bool = False) -> None:
        """textual-serve's ``serve``, with the banner printed once the port is listening: a script
        (or a test) that waits for the banner may connect at once, never to a refused port."""
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        loop.add_signal_handler(signal.SIGINT, self.request_exit)
        loop.add_signal_handler(signal.SIGTERM, self.request_exit)
        where = {"sock": self.sock} if self.sock is not None else {"host": self.host, "port": self.port}
        web.run_app(self._make_app(), **where, handle_signals=False, loop=loop, print=self.announce)

    @web.middleware
    async def guard(self, request: web.Request, handler):
        if not self.allowed.host(request.headers.get("Host")):
            log.warning("serve: refused a request for another host name (DNS rebinding or a wrong address)")
            return web.Response(status=403, text="403: this console answers only at its own address "
                                                  f"({self.public_url}/); reached through a tunnel or proxy at "
                                                  "another address, start serve with --public-url that address\n")
        origin = request.headers.get("Origin")
        if origin is not None and not self.allowed.origin(origin):
            log.warning("serve: refused a request from a page of another site")
            return web.Response(status=403, text="403: a page of another site may not use this console\n")
        if self.token is not None and request.path != "/login" and not request.path.startswith("/static/") \
                and not self._logged_in(request):
            if request.path == "/":
                raise web.HTTPSeeOther(f"{self.public_url}/login")
            return web.Response(status=401, text="401: log in first, at /login\n")
        response = await handler(request)
        if isinstance(response, web.Response):
            response.headers.setdefault("X-Frame-Options", "DENY")  # no framing by another site either
        return response

    def _logged_in(self, request: web.Request) -> bool:
        given = request.cookies.get(COOKIE, "")
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.cookie.encode())

    def _full(self) -> bool:
        return self.sessions >= self.max_sessions

    def _full_page(self) -> web.Response:
        return _page(_("All console sessions are in use"), full_words(self.max_sessions), 503)

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        if self._full():
            return self._full_page()
        return await super().handle_index(request)

    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:
        if self._full():
            log.warning("serve: refused a session: all %d are in use", self.max_sessions)
            return web.Response(status=503, text=f"503: all {self.max_sessions} console sessions are in use\n")
        self.sessions += 1  # one event loop: the check and the count cannot interleave
        try:
            return await self._run_session(request)
        finally:
            self.sessions -= 1

    async def _run_session(self, request: web.Request) -> web.WebSocketResponse:
        """textual-serve 1.1.3's ``handle_websocket``, with a ``Session`` kept in ``live`` until it ended."""
        websocket = web.WebSocketResponse(heartbeat=15)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        session: Session | None = None
        try:
            await websocket.prepare(request)
            session = Session(self.command, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                              close=websocket.close, download_manager=self.download_manager, debug=self.debug)
            self.live.add(session)
            await session.start(width, height)
            await self._process_messages(websocket, session)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # noqa: BLE001 - one broken session never stops the server
            log.exception(error)
        finally:
            if session is not None:
                await session.stop()  # the browser left (or serve stops): the console ends
                self.live.discard(session)
        return websocket

    async def handle_login_page(self, request: web.Request) -> web.Response:
        return self._login_form(False, 200)

    def _login_form(self, wrong: bool, status: int) -> web.Response:
        return _page(_("USSD console: log in"), login_words(self.public_url, wrong), status)

    async def handle_login(self, request: web.Request) -> web.Response:
        if self.token is None:
            raise web.HTTPSeeOther(f"{self.public_url}/")
        form = await request.post()
        given = form.get("token", "")
        given = given if isinstance(given, str) else ""
        if not hmac.compare_digest(given.strip().encode("utf-8", "replace"), self.token.encode("utf-8")):
            log.warning("serve: a login with a wrong token was refused (from %s)", request.remote)
            await asyncio.sleep(FAILED_LOGIN_DELAY)
            return self._login_form(True, 403)
        response = web.Response(status=303, headers={"Location": f"{self.public_url}/", "Cache-Control": "no-store"})
        response.set_cookie(COOKIE, self.cookie, httponly=True, samesite="Strict", path="/",
                            secure=self.public_url.startswith("https"))
        return response
