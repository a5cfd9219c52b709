"""Sending one event to one target: a command (no shell, the event on stdin) or an HTTP POST.

Each send either returns (delivered) or raises ``SendError`` with one escaped
line saying why: a non-zero exit, a status outside 2xx, a redirect, a refused
connection, or no answer within the timeout. Nothing here retries; the
deliverer does, with back-off.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import signal
import subprocess
import urllib.error
import urllib.parse
import urllib.request

from core.i18n import N_, MarkedError
from core.rules.text import escape_text, one_line
from core.urls import mask_in, mask_url


class SendError(MarkedError):
    """One failed attempt, as one line for the outbox and the log."""


def encode(event: dict) -> bytes:
    return json.dumps(event, sort_keys=True, separators=(",", ":")).encode("utf-8") + b"\n"


def send_command(argv: tuple[str, ...], event: dict, timeout: float) -> None:
    """Run ``argv`` with the event as one JSON object on stdin; exit 0 is delivered."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True, close_fds=True)
    except OSError as exc:
        raise SendError(N_("cannot run %(program)s: %(reason)s"),
                        program=escape_text(argv[0], 120), reason=exc.strerror or one_line(exc)) from None
    try:
        _out, err = proc.communicate(encode(event), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise SendError(N_("no exit within %(seconds)s s (killed)"), seconds=f"{timeout:g}") from None
    except BaseException:
        _kill_group(proc)
        raise
    if proc.returncode != 0:
        lines = [line for line in (err or b"").decode("utf-8", "replace").splitlines() if line.strip()]
        last = escape_text(lines[-1], 200) if lines else None
        if proc.returncode < 0:
            if last:
                raise SendError(N_("exited with signal %(code)s: %(said)s"), code=-proc.returncode, said=last)
            raise SendError(N_("exited with signal %(code)s"), code=-proc.returncode)
        if last:
            raise SendError(N_("exited with status %(code)s: %(said)s"), code=proc.returncode, said=last)
        raise SendError(N_("exited with status %(code)s"), code=proc.returncode)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.communicate()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is not a delivery: a POST turned into a GET elsewhere would lose the event."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _split_userinfo(url: str) -> tuple[str, dict[str, str]]:
    """``http://user:pass@host/...`` as the URL without its userinfo and a Basic ``Authorization``
    header: urllib would otherwise take ``user:pass@host`` for a host name (and quote it in errors)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, {}
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    pair = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode("utf-8")
    bare = urllib.parse.urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment))
    return bare, {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}


def send_url(url: str, event: dict, timeout: float, headers: dict[str, str] | None = None,
             token: str | None = None) -> None:
    """POST the event as ``application/json``; any 2xx is delivered. Every reason given for a
    failure shows the URL masked (``core.urls.mask_url``), never its password or query values."""
    try:
        _post(url, event, timeout, headers or {}, token)
    except SendError as exc:
        raise SendError(mask_in(str(exc), url)) from None


def _post(url: str, event: dict, timeout: float, extra: dict[str, str], token: str | None) -> None:
    shown = mask_url(url)
    bare, auth = _split_userinfo(url)
    request = urllib.request.Request(bare, data=encode(event), method="POST", headers={
        "Content-Type": "application/json",
        "User-Agent": "ussd-console",
        "X-Ussd-Event-Id": str(event.get("event_id", "")),
        **auth,
        **({"Authorization": f"Bearer {token}"} if token else {}),
        **extra,
    })
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            status = response.status
            response.read(65536)
    except urllib.error.HTTPError as exc:
        raise SendError(N_("HTTP %(code)s %(reason)s"), code=exc.code, reason=escape_text(exc.reason, 80)) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise SendError(N_("no answer within %(seconds)s s"), seconds=f"{timeout:g}") from None
        raise SendError(N_("cannot reach %(url)s: %(reason)s"),
                        url=escape_text(shown, 200), reason=escape_text(getattr(reason, 'strerror', None) or reason, 200)) from None
    except TimeoutError:
        raise SendError(N_("no answer within %(seconds)s s"), seconds=f"{timeout:g}") from None
    except http.client.HTTPException as exc:
        raise SendError(N_("bad answer from %(url)s: %(error)s"),
                        url=escape_text(shown, 200), error=exc.__class__.__name__) from None
    except (OSError, ValueError) as exc:
        raise SendError(N_("cannot reach %(url)s: %(reason)s"),
                        url=escape_text(shown, 200), reason=getattr(exc, 'strerror', None) or one_line(exc)) from None
    if not 200 <= status < 300:
        raise SendError(N_("HTTP %(status)s"), status=status)


def send(target: str, config, event: dict) -> None:
    """Send ``event`` to the configured target named ``target`` (``command`` or ``url``)."""
    if target == "command" and config.command:
        send_command(config.command, event, config.timeout)
    elif target == "url" and config.url:
        send_url(config.url, event, config.timeout, config.headers, config.token)
    else:
        raise SendError(N_("no %(target)s is configured in [alerts]"), target=target)
