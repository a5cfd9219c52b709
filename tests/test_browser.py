"""The console in a real browser through ``ussd-console serve`` (docs/rules.md#running-unattended): it draws, and the page
fetches nothing from outside the machine."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from urllib.parse import urlsplit

import pytest

from core import Receiver
from core.home import Home
from tests.support.helpers import ROOT
from tests.support.inbox_helpers import wait_for
from tools.browser_shot import capture, find_chromium, served
from tools.sample_store import build

LOOPBACK = {"127.0.0.1", "localhost"}


@pytest.fixture(scope="module")
def chromium():
    found = find_chromium()
    if found is None:
        why = "chromium is not installed (scripts/ensure-chromium installs Debian's package)"
        if os.environ.get("CI") or os.environ.get("USSD_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser test cannot run: {why}", pytrace=False)
        pytest.skip(why)
    return found


def outside(urls) -> list[str]:
    return [u for u in urls if urlsplit(u).scheme not in ("data", "blob") and urlsplit(u).hostname not in LOOPBACK]


def test_the_console_draws_in_headless_chromium_with_nothing_fetched_from_outside(chromium, tmp_path):
    home = build(Home(tmp_path / "home"))
    png = tmp_path / "screenshots" / "browser.png"
    with served(home.root, tmp_path / "serve.log") as url:
        page = urllib.request.urlopen(url, timeout=60).read().decode()
        seen = capture(url, png, chromium)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    # What the console drew reached the page: its header, its totals, the conflict badge.
    assert b"USSD console" in seen.received and b"cases 10" in seen.received
    assert b"CONFLICT OPEN" in seen.received
    assert seen.requests and outside(seen.requests) == []
    assert any(u.endswith(".ttf") for u in seen.requests)  # the font came from this server
    assert any(u.startswith("ws://127.0.0.1") for u in seen.requests)
    # The served page names no other host (the SVG namespace is a name, never fetched).
    named = set(re.findall(r"""(?:https?|wss?)://[^\s"'<>)]+""", page)) - {"http://www.w3.org/2000/svg"}
    assert outside(named) == [], named
    assert "googleapis" not in page and "googleapis" not in seen.html


def test_serve_refuses_a_public_address_without_public_and_warns_with_it(home):
    Receiver(str(home.db)).close()  # serve shows a store; it never makes one
    done = subprocess.run([sys.executable, "-m", "console.cli", "--home", str(home.root), "serve", "--host", "0.0.0.0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "needs --public" in done.stderr
    # Every address, but which one browsers use must be said: only requests for it are answered.
    done = subprocess.run([sys.executable, "-m", "console.cli", "--home", str(home.root), "serve", "--host",
                           "0.0.0.0", "--port", "0", "--public"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--public-url" in done.stderr
    # Any free port (serve binds it and says which); the address browsers use is a proxy's, so its
    # port need not be the one listened on.
    proc = subprocess.Popen([sys.executable, "-m", "console.cli", "--home", str(home.root), "serve", "--host",
                             "0.0.0.0", "--port", "0", "--public", "--public-url", "http://127.0.0.1:8443"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = wait_for(lambda: proc.stderr.readline(), what="the warning")
        token_line = wait_for(lambda: proc.stderr.readline(), what="the login token")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        proc.stderr.close()
    port = re.search(r"0\.0\.0\.0:(\d+)", line)
    assert port and int(port.group(1)) > 0, line  # the port bound, not the 0 asked for
    assert "WARNING" in line and "login token" in line and "0.0.0.0:" in line
    assert "login token" in token_line and "http://127.0.0.1:8443/login" in token_line
