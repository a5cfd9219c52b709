"""The files the receiver writes in its home: never through a planted symlink, and never readable by
others whatever the umask it was started with (docs/running-securely.md)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from core.home import Home
from core.ops.metrics import metrics_path
from tests.support.inbox_helpers import frame_lines, text_of, wait_for
from tests.support.home_watch import Watch, cli, status_json


def deliver(home: Home, outside: Path, name: str, data: str) -> None:
    """As a gateway would: written elsewhere, renamed into the inbox whole."""
    src = outside / name
    src.write_text(data)
    os.rename(src, home.inbox / name)


# -- symlinks planted where the receiver writes ------------------------------------------------

@pytest.mark.parametrize("victim", ["store", "other file"])
def test_a_log_planted_as_a_symlink_is_refused_naming_it_and_its_target_is_untouched(tmp_path, victim):
    home = Home(tmp_path / "home")
    feed = tmp_path / "feed.txt"
    feed.write_text(text_of(frame_lines("s", 3)))
    assert cli(home, "ingest", str(feed)).returncode == 0
    target = home.db if victim == "store" else tmp_path / "notes.txt"
    if victim != "store":
        target.write_bytes(b"someone else's file\n")
    home.logs.mkdir(exist_ok=True)
    for old in home.logs.iterdir():
        old.unlink()
    home.log_file.symlink_to(target)
    before = target.read_bytes()

    watch = Watch(home, tmp_path, wait=False)
    code = watch.exit_code()
    err = watch.stderr()
    watch.stop()

    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "symlink" in lines[0] and str(home.log_file) in lines[0], err
    assert "Traceback" not in err
    assert target.read_bytes() == before  # byte for byte
    assert home.log_file.is_symlink()


def test_a_log_link_planted_while_watch_runs_is_reported_naming_it_and_never_written_through(tmp_path):
    home = Home(tmp_path / "home")
    victim = tmp_path / "notes.txt"
    victim.write_bytes(b"someone else's file\n")
    watch = Watch(home, tmp_path)
    try:
        os.replace(home.log_file, tmp_path / "old.log")  # as a rotation by someone else would leave it
        home.log_file.symlink_to(victim)
        deliver(home, tmp_path, "late.txt", text_of(frame_lines("l", 2)))  # something to log
        wait_for(lambda: "cannot write the log file" in watch.stderr(), what="the log failure on stderr")
        assert wait_for(lambda: status_json(home)["files_by_state"]["processed"] == 1, what="the file taken in")
    finally:
        assert watch.stop() == 0
    line = next(x for x in watch.stderr().splitlines() if "cannot write the log file" in x)
    assert str(home.log_file) in line and "symlink" in line
    assert victim.read_bytes() == b"someone else's file\n"


def test_a_metrics_file_planted_as_a_symlink_is_a_fault_naming_it_and_never_written_through(tmp_path):
    home = Home(tmp_path / "home")
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"untouched\n")
    metrics_path(home).parent.mkdir(parents=True)
    metrics_path(home).symlink_to(victim)
    watch = Watch(home, tmp_path)
    try:
        faults = wait_for(lambda: [f for f in status_json(home)["health"]["faults"] if "metrics" in f],
                          what="the metrics fault in status")
    finally:
        assert watch.stop() == 0
    assert str(metrics_path(home)) in faults[0] and "symlink" in faults[0]
    assert victim.read_bytes() == b"untouched\n"
    assert "metrics file not written" in home.log_file.read_text()


def test_an_exports_folder_that_is_a_symlink_is_refused_and_nothing_lands_behind_it(tmp_path):
    home = Home(tmp_path / "home")
    feed = tmp_path / "feed.txt"
    feed.write_text(text_of(frame_lines("e", 2)))
    assert cli(home, "ingest", str(feed)).returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home.exports.symlink_to(elsewhere, target_is_directory=True)
    done = cli(home, "export", "cases")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "symlink" in lines[0] and str(home.exports) in lines[0], done.stderr
    assert list(elsewhere.iterdir()) == []


def test_an_export_target_that_is_a_symlink_is_refused_even_with_force(tmp_path):
    home = Home(tmp_path / "home")
    feed = tmp_path / "feed.txt"
    feed.write_text(text_of(frame_lines("f", 2)))
    assert cli(home, "ingest", str(feed)).returncode == 0
    victim = tmp_path / "victim.csv"
    victim.write_bytes(b"keep me\n")
    link = tmp_path / "out.csv"
    link.symlink_to(victim)
    done = cli(home, "export", "cases", "--out", str(link), "--force")
    assert done.returncode == 2 and "symlink" in done.stderr and str(link) in done.stderr
    assert victim.read_bytes() == b"keep me\n" and link.is_symlink()


# -- modes, whatever the umask ------------------------------------------------------------------

def _every_path(root: Path):
    yield root
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            yield Path(folder) / name


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_nothing_the_receiver_makes_in_its_home_is_open_to_others_whatever_the_umask(tmp_path, umask):
    home = Home(tmp_path / "home")  # made by the commands themselves
    feed = tmp_path / "feed.txt"
    feed.write_text(text_of(frame_lines("u", 3)))
    assert cli(home, "ingest", str(feed), umask=umask).returncode == 0
    watch = Watch(home, tmp_path, umask=umask)
    try:
        deliver(home, tmp_path, "good.txt", text_of(frame_lines("w", 2)))
        deliver(home, tmp_path, "bad.bin", "\x00\x01 not frames at all\n" * 3)
        wait_for(lambda: status_json(home)["files_by_state"]["processed"] >= 1
                 and status_json(home)["files_rejected"] >= 1, what="both files taken")
        wait_for(lambda: metrics_path(home).exists(), what="the metrics file")
        assert cli(home, "export", "cases", umask=umask).returncode == 0
        seen = {p: os.lstat(p).st_mode for p in _every_path(home.root)}  # while watch runs: -wal and -shm too
    finally:
        assert watch.stop() == 0
    names = {p.name for p in seen}
    assert {"receiver.db", "receiver.db-wal", "receiver.db-shm", "receiver.log", "ussd_console.prom"} <= names
    assert any(p.name.endswith(".reason") for p in seen) and any(p.parent == home.exports for p in seen)
    open_ = [f"{p} {m & 0o7777:04o}" for p, m in seen.items() if m & 0o077]
    assert open_ == []
    assert os.lstat(home.root).st_mode & 0o777 == 0o700
    assert status_json(home)["home_open_to_others"] == []


def test_status_warns_when_an_existing_home_is_open_to_others(tmp_path):
    home = Home(tmp_path / "home")
    feed = tmp_path / "feed.txt"
    feed.write_text(text_of(frame_lines("o", 1)))
    assert cli(home, "ingest", str(feed)).returncode == 0
    os.chmod(home.root, 0o755)
    os.chmod(home.db, 0o644)
    loose = status_json(home)["home_open_to_others"]
    assert loose[:2] == [f"{home.root} is mode 0755, open to others; run: chmod 0750 {home.root}",
                         f"{home.db} is mode 0644, open to others; run: chmod 0640 {home.db}"]
    # SQLite gives its -wal and -shm the store's own mode: named too, so one chmod list fixes all
    assert [line.split(" is mode ")[0] for line in loose[2:]] == [f"{home.db}-wal", f"{home.db}-shm"]
    text = cli(home, "status")
    assert text.returncode == 0
    assert f"! {home.root} is mode 0755, open to others; run: chmod 0750 {home.root}" in text.stdout.splitlines()
    assert f"! {home.db} is mode 0644, open to others; run: chmod 0640 {home.db}" in text.stdout.splitlines()
    # In French the warning is French, the chmod to run the same; --json keeps the English lines.
    said = cli(home, "--lang", "fr", "status").stdout.splitlines()
    assert f"! {home.db} a le mode 0644, ouvert à d'autres ; lancez : chmod 0640 {home.db}" in said
    assert cli(home, "--lang", "fr", "status", "--json").stdout == cli(home, "status", "--json").stdout
    # an existing home keeps the mode its administrator gave it: nothing loosened, nothing reset
    assert stat.S_IMODE(os.lstat(home.root).st_mode) == 0o755
