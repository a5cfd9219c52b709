"""Installed, not cloned: the built wheel carries everything the demo needs.

The wheel is built from a copy of the tracked files, installed into a fresh virtual
environment with ``--no-index --no-deps`` (the dependencies this test runs with are made
visible through a ``.pth`` file, so nothing is downloaded), and ``ussd-console demo --print``
runs from a folder that is not the repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from tests.support.helpers import ROOT


def tracked_copy(dest: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def test_the_installed_wheel_runs_the_demo_from_another_folder(tmp_path):
    src = tracked_copy(tmp_path / "src")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    [wheel] = list((tmp_path / "dist").glob("ussd_console-*.whl"))

    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # The test's own dependencies (textual, peewee, ...) without our package: a plain path entry is
    # not a site folder, so the editable install's hook there stays inactive.
    (site / "test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index",
                              "--no-deps", str(wheel)], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stdout + install.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "USSD_CONSOLE_HOME", "USSD_CONSOLE_DB")}
    where = subprocess.run([str(python), "-c", "import console; print(console.__file__)"], cwd=elsewhere, env=env,
                           capture_output=True, text=True, timeout=60)
    assert where.stdout.startswith(str(env_dir)), where.stdout + where.stderr  # the wheel's copy, not the repo's
    # The ingest's compiled loops travel in the wheel wherever this checkout's build compiled them.
    from core.rules import compiled

    built = subprocess.run([str(python), "-c", "from core.rules import compiled; print(compiled.loops is not None)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)
    assert built.stdout.strip() == str(compiled.loops is not None), built.stdout + built.stderr
    demo = subprocess.run([str(env_dir / "bin" / "ussd-console"), "demo", "--print"], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=300)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "sample files missing" not in demo.stderr
    assert "Dispatch ranking" in demo.stdout and "kak01-1" in demo.stdout
    assert list(elsewhere.iterdir()) == []  # the demo's home is a throwaway one
    # The catalogs travel as package data: a usage error in French from the installed copy.
    french = subprocess.run([str(env_dir / "bin" / "ussd-console"), "--lang", "fr", "status", "--bogus"], cwd=elsewhere,
                            env=env, capture_output=True, text=True, timeout=60)
    assert french.returncode == 2 and french.stderr.startswith("utilisation : "), french.stderr
    assert "arguments non reconnus : --bogus" in french.stderr
