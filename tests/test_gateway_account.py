"""docs/running-securely.md's gateway-account recipe with real users: a throwaway service user runs
`watch`, a throwaway gateway account in its group drops a file into inbox/, and that account can
read or change nothing else in the home. The systemd unit's sandboxing is scored offline."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.support.helpers import ROOT
from tests.support.inbox_helpers import frame_lines, text_of, wait_for

UNIT = ROOT / "deploy" / "ussd-console-watch.service"
TMPFILES = ROOT / "deploy" / "ussd-console.tmpfiles.conf"

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("useradd") and shutil.which("setpriv")),
    reason="the recipe needs root to create a throwaway service user and gateway account (useradd) "
           "and to run commands as them (setpriv); run the suite as root to test it")


def _run(*argv: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=120, **kwargs)


def _as(user: str, group: str, *argv: str, **kwargs) -> subprocess.CompletedProcess:
    return _run("setpriv", f"--reuid={user}", f"--regid={group}", "--init-groups", "--", *argv, **kwargs)


@pytest.fixture
def accounts():
    """The service user (primary group G) and a gateway account (its own group, and a member of G)."""
    tag = uuid.uuid4().hex[:6]
    group, service, gateway = f"ussdt{tag}", f"ussdsvc{tag}", f"ussdgw{tag}"
    made: list[tuple[str, str]] = []
    try:
        for argv, undo in ((("groupadd", "--system", group), ("groupdel", group)),
                           (("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                             "--gid", group, service), ("userdel", service)),
                           (("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                             "--user-group", "--groups", group, gateway), ("userdel", gateway))):
            done = _run(*argv)
            assert done.returncode == 0, done.stderr
            made.append(undo)
        yield service, gateway, group
    finally:
        for undo in reversed(made):
            _run(*undo)
        _run("groupdel", gateway)  # the gateway's own group, if userdel left it


@pytest.fixture
def base():
    """A folder both accounts can pass through (pytest's own tmp folder is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="ussd-gateway-"))
    os.chmod(folder, 0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@needs_root
def test_a_gateway_account_drops_into_inbox_and_can_read_or_change_nothing_else(accounts, base):
    service, gateway, group = accounts
    python = [sys.executable, "-m", "console.cli"]
    probe = _as(service, group, sys.executable, "-c", "import console.cli", cwd=ROOT)
    if probe.returncode != 0:
        pytest.skip(f"the throwaway service user cannot run this checkout's Python ({probe.stderr.strip()[-200:]}); "
                    "put the checkout where other users can read it")
    home = base / "home"
    # As the unit and ussd-console.tmpfiles.conf set it up (docs/running-securely.md, "Install"):
    assert _run("install", "-d", "-m", "0750", "-o", service, "-g", group, str(home)).returncode == 0
    assert _run("install", "-d", "-m", "3770", "-o", service, "-g", group, str(home / "inbox")).returncode == 0
    config = base / "config.toml"
    config.write_text("[logs]\nbackups = 3\n")
    assert _run("install", "-m", "0600", "-o", service, "-g", group, str(config), str(home / "config.toml")).returncode == 0
    config_bytes = (home / "config.toml").read_bytes()

    err = open(base / "watch-stderr.txt", "w")
    watch = subprocess.Popen(
        ["setpriv", f"--reuid={service}", f"--regid={group}", "--init-groups", "--", *python,
         "--home", str(home), "watch", "--sweep-interval", "0.2", "--settle-time", "0.1"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)

    def status() -> dict:
        done = _as(service, group, *python, "--home", str(home), "status", "--json", cwd=ROOT)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    try:
        wait_for(lambda: watch.poll() is not None or "watching " in (base / "watch-stderr.txt").read_text(),
                 what="watch to start as the service user")
        assert watch.poll() is None, (base / "watch-stderr.txt").read_text()
        # The gateway writes the way the docs say: umask 027, a temporary name, then a rename.
        drop = _as(gateway, gateway, "sh", "-c", 'umask 027 && cat > "$1/.site.txt.tmp" && mv "$1/.site.txt.tmp" "$1/site.txt"',
                   "sh", str(home / "inbox"), input=text_of(frame_lines("gw", 2)))
        assert drop.returncode == 0, drop.stderr
        wait_for(lambda: status()["files_by_state"]["processed"] == 1, what="the gateway's file taken in")
        assert status()["cases"] == 2

        refused = {
            "read the store": ("cat", str(home / "receiver.db")),
            "read the log": ("cat", str(home / "logs" / "receiver.log")),
            "append to the config": ("sh", "-c", f'echo "[alerts]" >> "{home}/config.toml"'),
            "replace the config": ("sh", "-c", f'echo x > "{home}/new.toml" && mv "{home}/new.toml" "{home}/config.toml"'),
            "delete the store": ("rm", "-f", str(home / "receiver.db")),
            "move the config away": ("mv", str(home / "config.toml"), str(home / "inbox" / "config.toml")),
            "look into the claims": ("ls", str(home / "inbox" / ".claimed")),
            "remove the claims folder": ("rm", "-rf", str(home / "inbox" / ".claimed")),
            "read the archive": ("ls", str(home / "processed")),
        }
        for what, argv in refused.items():
            done = _as(gateway, gateway, *argv)
            assert done.returncode != 0, f"the gateway account could {what}"
            assert "ermission denied" in done.stderr or "not permitted" in done.stderr, (what, done.stderr)
        assert (home / "config.toml").read_bytes() == config_bytes
        assert (home / "receiver.db").exists() and (home / "inbox" / ".claimed").is_dir()

        uid = int(_run("id", "-u", service).stdout)
        for folder, dirs, files in os.walk(home):
            for name in dirs + files:
                path = Path(folder) / name
                st = os.lstat(path)
                if path == home / "inbox":
                    assert st.st_mode & 0o7777 == 0o3770, oct(st.st_mode)  # as installed: never tightened
                    continue
                assert st.st_uid == uid, path
                assert st.st_mode & 0o077 == 0, f"{path} {st.st_mode & 0o7777:04o}"
        assert os.lstat(home).st_mode & 0o777 == 0o750
        assert status()["home_open_to_others"] == []
    finally:
        if watch.poll() is None:
            watch.send_signal(signal.SIGTERM)
        try:
            watch.wait(timeout=60)
        except subprocess.TimeoutExpired:
            watch.kill()
            watch.wait(timeout=60)
        err.close()
    assert watch.returncode == 0, (base / "watch-stderr.txt").read_text()


def test_the_unit_keeps_the_home_the_service_users_and_the_inbox_the_gateway_groups():
    unit = UNIT.read_text()
    settings = [line.strip() for line in unit.splitlines() if line.strip() and not line.startswith("#")]
    assert "UMask=0077" in settings and "StateDirectoryMode=0750" in settings
    assert any(s.startswith("MemoryMax=") for s in settings) and any(s.startswith("TasksMax=") for s in settings)
    lines = [line.split() for line in TMPFILES.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert ["d", "/var/lib/ussd-console/inbox", "3770", "ussd", "ussd", "-"] in lines
    assert ["d", "/var/lib/ussd-console", "0750", "ussd", "ussd", "-"] in lines


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed (Debian: apt-get install systemd)")
def test_the_units_sandboxing_scores_at_most_3_0_offline():
    done = _run("systemd-analyze", "security", "--offline=true", "--no-pager", str(UNIT))
    if "--offline" in done.stderr and "unrecognized" in done.stderr:
        pytest.skip("this systemd-analyze has no --offline (systemd 250 or later)")
    score = [line for line in done.stdout.splitlines() if "Overall exposure level" in line]
    assert score, done.stdout + done.stderr
    value = float(score[0].split(":")[1].split()[0])
    assert value <= 3.0, score[0]
