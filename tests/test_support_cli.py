"""The in-process command line (tests/support/cli.py) says what the started command says, and leaves
the test's process as it found it; the tiers put each test where tests/support/tiers.py says."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys

import pytest

from tests.support.cli import cli, run_cli
from tests.support.helpers import ROOT, frame
from tests.support.tiers import reaches_process, starts_process


def started(*argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **kw.pop("env", {})}, **kw)


@pytest.mark.parametrize("argv", [["status"], ["nonsense"], ["cases", "--limit", "0"], ["cases"],
                                  ["quarantine", "--json"]], ids=" ".join)
def test_the_runner_gives_what_the_started_command_gives(home, tmp_path, argv):
    feed = tmp_path / "feed.txt"
    feed.write_text("".join(f"w{n}-1 {frame(n, 'Kakuma1', 'MED', n, 50 + n)}\n" for n in range(1, 30)))
    assert cli(home, "ingest", str(feed)).returncode == 0
    here, there = cli(home, *argv), started("--home", str(home.root), *argv)
    assert (here.returncode, here.stdout, here.stderr) == (there.returncode, there.stdout, there.stderr)
    assert max(map(len, here.stdout.splitlines()), default=0) <= 80  # Rich wraps as to a pipe


def test_the_runner_puts_back_what_a_command_changes_for_the_process(home, tmp_path, monkeypatch):
    monkeypatch.setenv("USSD_PROBE", "kept")
    before = (dict(os.environ), os.getcwd(), signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM),
              logging.getLogger().handlers[:], logging.getLogger("ussd").handlers[:])
    umask = os.umask(0o022)
    try:
        ran = run_cli("--home", str(home.root), "status", env={"USSD_PROBE": "changed", "COLUMNS": "120"},
                      cwd=tmp_path, umask=0o000)
        assert ran.returncode == 2 and "no store" in ran.stderr
        assert run_cli("--home", str(home.root), "ingest", "--bogus").returncode == 2  # argparse's exit
        after = (dict(os.environ), os.getcwd(), signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM),
                 logging.getLogger().handlers[:], logging.getLogger("ussd").handlers[:])
        assert after == before
        assert os.umask(0o022) == 0o022
    finally:
        os.umask(umask)


def test_the_tiers_follow_what_a_test_starts(request):
    items = {item.name: item for item in request.session.items}
    here = items.get("test_the_tiers_follow_what_a_test_starts")
    assert here is not None and not starts_process(here)
    runner = [i for n, i in items.items() if n.startswith("test_the_runner_gives_what_the_started_command_gives")]
    # Its `started` is a subprocess; under `make check` (-m "not process") it is not collected at all.
    assert all(starts_process(i) for i in runner)
    assert runner or request.config.option.markexpr
    put_back = items["test_the_runner_puts_back_what_a_command_changes_for_the_process"]
    assert not starts_process(put_back)


def test_the_tiers_follow_a_helper_imported_inside_the_test():
    """`from tools.perf_probe import measure` in a test's body: measure starts a child, so the test
    is in the process tier though the module never names it; the screenshots tool starts nothing."""
    def probes():
        from tools.perf_probe import IDLE_SECONDS, measure  # noqa: F401

    def shoots():
        from tools.screenshots import SCREENS, main as shots  # noqa: F401

    assert reaches_process(probes, set())
    assert not reaches_process(shoots, set())
