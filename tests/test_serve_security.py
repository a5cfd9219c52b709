"""``ussd-console serve`` against the attacks of docs/serve-security.md, through the real process:
a page of another site, a DNS-rebinding name, too many sessions, ``--public`` without its token,
and a PostgreSQL password on a session's command line."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from core.home import Home
from tests.support.helpers import ROOT
from tests.support.inbox_helpers import wait_for
from tests.support.serve import DRAWN, descendants, fetch, get, own, serving, session, ws_session
from tools.sample_store import build


@pytest.fixture
def sample_home(tmp_path):
    return build(Home(tmp_path / "home")).root


def test_the_own_page_works_and_another_sites_page_or_a_rebinding_name_gets_403(sample_home, tmp_path):
    with serving(sample_home, tmp_path) as s:
        host = f"127.0.0.1:{s.port}"
        status, page, _h, _c = get(f"{s.url}/")
        assert status == 200 and f"ws://{host}/ws" in page
        assert DRAWN in session(s.url, headers=own(s.url))  # the page's own origin: the console draws
        # A page of another site opening the web socket (browsers always send its Origin).
        assert session(s.url, headers={"Origin": "http://evil.example"}) == 403
        assert session(s.url, headers={"Origin": f"http://127.0.0.1:{s.port + 1}"}) == 403
        assert session(s.url, headers={"Origin": "null"}) == 403
        # DNS rebinding: evil.example resolves to 127.0.0.1, so the browser sends its name as Host
        # and, being on evil.example's page, its own origin.
        rebound = f"evil.example:{s.port}"
        assert session(s.url, headers={"Host": rebound, "Origin": f"http://{rebound}"}) == 403
        assert get(f"{s.url}/", headers={"Host": rebound})[0] == 403
        assert get(f"{s.url}/", headers={"Origin": "http://evil.example"})[0] == 403
        assert get(f"{s.url}/static/css/xterm.css", headers={"Host": rebound})[0] == 403
        # localhost is the same machine: allowed, as the loopback address is.
        assert get(f"{s.url}/", headers={"Host": f"localhost:{s.port}"})[0] == 200
        out = s.stop()
    assert "refused a request for another host name" in out and "refused a request from a page of another site" in out


def test_sessions_over_the_cap_are_refused_with_a_clear_page(sample_home, tmp_path):
    with serving(sample_home, tmp_path, "--max-sessions", "1") as s:
        async def scenario():
            hold, drawn = asyncio.Event(), asyncio.Event()
            first = asyncio.create_task(ws_session(s.url, headers=own(s.url), hold=hold, drawn=drawn))
            await asyncio.wait_for(drawn.wait(), 90)
            second = await ws_session(s.url, headers=own(s.url))
            page = await fetch(f"{s.url}/")
            hold.set()
            return await first, second, page

        first, second, (status, page, _h, _c) = asyncio.run(scenario())
        assert DRAWN in first
        assert second == 503
        assert status == 503 and "All console sessions are in use" in page and "--max-sessions" in page
        # The first session closed: its place is free again.
        wait_for(lambda: get(f"{s.url}/")[0] == 200, what="the page answered again")
        assert DRAWN in session(s.url, headers=own(s.url))


def test_max_sessions_from_the_config_and_bad_values_are_one_line(sample_home, tmp_path):
    (sample_home / "config.toml").write_text("[serve]\nmax_sessions = 0\n")
    done = subprocess.run([sys.executable, "-m", "console.cli", "--home", str(sample_home), "serve"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "[serve] max_sessions" in done.stderr
    (sample_home / "config.toml").write_text("[serve]\nmax_sessions = 2\n")
    with serving(sample_home, tmp_path) as s:
        assert "at most 2 sessions at once" in s.output()


def test_public_needs_the_login_token_before_anyws_session(sample_home, tmp_path):
    token = "k3Q-very-long-login-token-0123456789"
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    with serving(sample_home, tmp_path, "--public", "--token-file", str(token_file)) as s:
        status, _page, headers, _c = get(f"{s.url}/")
        assert status == 303 and headers["Location"] == f"{s.url}/login"
        assert session(s.url, headers=own(s.url)) == 401
        assert get(f"{s.url}/download/anything")[0] == 401
        status, page, _h, cookies = get(f"{s.url}/login", data={"token": "wrong-token-wrong-token"})
        assert status == 403 and "not the login token" in page and not cookies
        assert session(s.url, headers=own(s.url), cookies={"ussd_console_login": token}) == 401  # the cookie is not the token
        status, _page, headers, cookies = get(f"{s.url}/login", data={"token": token}, headers=own(s.url))
        assert status == 303 and "ussd_console_login" in cookies
        jar = {"ussd_console_login": cookies["ussd_console_login"].value}
        assert "httponly" in headers["Set-Cookie"].lower() and "samesite=strict" in headers["Set-Cookie"].lower()
        assert get(f"{s.url}/", cookies=jar)[0] == 200
        assert DRAWN in session(s.url, headers=own(s.url), cookies=jar)
        # Logged in or not, the Host and Origin rules hold.
        assert session(s.url, headers={"Origin": "http://evil.example"}, cookies=jar) == 403
        out = s.stop()
    assert "a login with a wrong token was refused" in out
    assert token not in out  # a token from a file is never printed


def test_public_without_a_token_file_prints_a_random_token_that_logs_in(sample_home, tmp_path):
    with serving(sample_home, tmp_path, "--public") as s:
        [line] = [x for x in s.output().splitlines() if "login token" in x]
        token = line.rsplit(" ", 1)[1]
        assert len(token) >= 24
        assert session(s.url, headers=own(s.url)) == 401
        status, _p, _h, cookies = get(f"{s.url}/login", data={"token": token})
        assert status == 303
        assert DRAWN in session(s.url, cookies={"ussd_console_login": cookies["ussd_console_login"].value})


def test_a_postgres_password_is_neither_in_the_banner_nor_in_a_sessions_argv(pg_url, tmp_path):
    from tests.support.pg_server import fresh_schema_url

    password = "Pg-s3cret-Passw0rd"
    url = fresh_schema_url(pg_url).replace("postgresql://postgres@", f"postgresql://postgres:{password}@", 1)
    assert password in url  # the local server trusts its socket: the password is carried, not checked
    home = tmp_path / "home"
    with serving(home, tmp_path, "--db", url) as s:
        async def scenario():
            hold, drawn = asyncio.Event(), asyncio.Event()
            task = asyncio.create_task(ws_session(s.url, headers=own(s.url), hold=hold, drawn=drawn))
            await asyncio.wait_for(drawn.wait(), 90)
            pids = descendants(s.proc.pid)
            argvs = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids]
            envs = [Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") for pid in pids]
            hold.set()
            return await task, argvs, envs

        drawn, argvs, envs = asyncio.run(scenario())
        assert DRAWN in drawn
        assert any(b"console.cli" in a for a in argvs), argvs  # the session's processes were seen
        assert not any(password.encode() in a for a in argvs)
        assert any(f"USSD_CONSOLE_DB={url}".encode() in env for env in envs)  # the store came this way
        out = s.stop()
    assert password not in out


def test_the_public_url_is_the_pages_own_address_and_a_bad_token_file_is_one_line(sample_home, tmp_path):
    with serving(sample_home, tmp_path, "--public-url", "https://ussd.example.org/") as s:
        # Behind a TLS proxy: the browser's Host and Origin are the proxy's, without a port.
        proxied = {"Host": "ussd.example.org", "Origin": "https://ussd.example.org"}
        status, page, _h, _c = get(f"{s.url}/", headers=proxied)
        assert status == 200 and "wss://ussd.example.org/ws" in page
        assert get(f"{s.url}/", headers={"Host": "ussd.example.org", "Origin": "http://ussd.example.org"})[0] == 403
        assert get(f"{s.url}/", headers={"Host": "ussd.example.org:8443"})[0] == 403
        assert get(f"{s.url}/", headers={"Host": "other.example.org"})[0] == 403
    short = tmp_path / "short-token"
    short.write_text("abc\n")
    for flags, said in ((["--public", "--token-file", str(short)], "at least 16 characters"),
                        (["--token-file", str(short)], "--token-file is for --public"),
                        (["--max-sessions", "0"], "--max-sessions must be"),
                        (["--public-url", "ftp://x"], "--public-url must be")):
        done = subprocess.run([sys.executable, "-m", "console.cli", "--home", str(sample_home), "serve", *flags],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
