"""Backups of a PostgreSQL store through the real command line, on the throwaway server: a
``pg_dump`` member, verified with ``pg_restore --list`` and a scratch restore, restored with
``pg_restore`` into an empty database, and refused over a database that holds anything."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path

import pytest

from console.cli import main
from core.backup import archive, pg
from core.home import Home
from tests.support.backup_support import backup_key, resign
from tests.support.signing import A1, A1_FIX, B2, C1, PASSPHRASES
from tests.support.backups import assert_plain_failure, repack, run
from tests.support.waiting import wait_for

# No skip of its own: where the throwaway server runs (pg_url), Debian's postgresql package has
# brought postgresql-client's pg_dump and pg_restore with it.


def new_database(pg_url: str) -> str:
    """A new, empty database on the throwaway server, and its URL."""
    import psycopg

    name = f"b{secrets.token_hex(5)}"
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    return pg.with_database(pg_url, name, None)


SCRATCH = "ussd_verify_"  # how a verify names its scratch database (core/backup/pg.py)


def databases(pg_url: str) -> set[str]:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as con:
        return {r[0] for r in con.execute("SELECT datname FROM pg_database")}


def passfile(tmp_path: Path, name: str) -> str:
    path = tmp_path / f"{name}.pass"
    path.write_text(PASSPHRASES[name] + "\n")
    path.chmod(0o600)
    return str(path)


def cli_ok(home: Home, *argv: str) -> subprocess.CompletedProcess:
    proc = run("--home", str(home.root), *argv)
    assert proc.returncode == 0, (argv, proc.stderr)
    return proc


def arrange(home: Home, *argv: str) -> None:
    assert main(["--home", str(home.root), *argv]) == 0, argv


@pytest.fixture
def pg_home(tmp_path, pg_url) -> tuple[Home, str]:
    """A home whose store (``db =`` in config.toml) is a PostgreSQL database with operators, cases,
    a correction resolved by a signature and a status change. Made in this process (the arrangement,
    not what is tested: every backup, verify and restore below runs the real command)."""
    url = new_database(pg_url)
    home = Home(tmp_path / "home").ensure()
    home.config.write_text(f"db = {json.dumps(url)}\n")
    arrange(home, "operator", "add", "alice", "--passphrase-file", passfile(tmp_path, "alice"))
    frames = tmp_path / "frames.txt"
    frames.write_text("".join(f"{fid} {text}\n" for fid, text in (A1, B2, C1)))
    arrange(home, "ingest", str(frames))
    fix = tmp_path / "fix.txt"
    fix.write_text(f"{A1_FIX[0]} {A1_FIX[1]}\n")
    arrange(home, "ingest", str(fix))
    from core import Receiver

    with Receiver(url) as r:
        qid = next(q.id for q in r.quarantine(status=None, limit=100) if q.frame_id == "A-1")
    arrange(home, "resolve", str(qid), "--accept-correction", "--operator", "alice",
             "--passphrase-file", passfile(tmp_path, "alice"), "--reason", "checked with the site")
    arrange(home, "case", "mark", "B-2", "dispatched", "--operator", "alice",
             "--passphrase-file", passfile(tmp_path, "alice"), "--reason", "checked with the site")
    return home, url


def make(home: Home, tmp_path: Path) -> Path:
    proc = cli_ok(home, "--json", "backup", "--to", str(tmp_path / "usb"))
    return Path(json.loads(proc.stdout)["file"])


def test_backup_of_a_postgresql_store_holds_a_dump_and_verifies(pg_home, tmp_path, pg_url):
    home, url = pg_home
    file = make(home, tmp_path)
    import tarfile

    with tarfile.open(file, "r:gz") as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile(archive.MANIFEST).read())
        head = tar.extractfile(pg.DUMP).read(5)
    assert pg.DUMP in names and archive.STORE not in names and head == b"PGDMP"  # pg_dump's custom format
    assert manifest["store_kind"] == "postgresql" and manifest["counts"]["cases"] == 3
    before = {name for name in databases(pg_url) if name.startswith(SCRATCH)}
    # With the home's server at hand, the dump is restored into a scratch database and its chain checked.
    proc = run("--home", str(home.root), "--json", "backup", "verify", str(file))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert any("scratch database" in c for c in out["checked"]) and out["not_checked"] == []
    assert any("pg_restore --list" in c for c in out["checked"])
    # The scratch database is gone again. The server is the whole run's: another worker's verify may
    # hold one of its own for a moment, so wait for every scratch database not there before to go.
    wait_for(lambda: {name for name in databases(pg_url) if name.startswith(SCRATCH)} <= before,
             what="no scratch database left")
    # With no server, it says what it could check and what not.
    proc = run("--home", str(tmp_path / "elsewhere"), "backup", "verify", str(file), "--backup-key", backup_key(home))
    assert proc.returncode == 0, proc.stderr
    assert "not checked: the audit chain" in proc.stderr and "pg_restore --list" in proc.stdout


def test_backup_taken_while_watch_writes_to_postgresql_verifies(pg_home, tmp_path):
    """The dump and the manifest's counts come from one moment, however busy the receiver."""
    import signal

    from tests.support.inbox_helpers import drop, frame_lines, text_of
    from tests.support.watch import Watcher

    home, _url = pg_home
    watcher = Watcher(home, tmp_path, "--settle-time", "0", "--no-observer", "--sweep-interval", "0.2")
    try:
        files = []
        for i in range(3):
            for j in range(4):
                drop(home, f"live-{i}-{j}.txt", text_of(frame_lines(f"P{i}x{j}-", 150)))
            files.append(make(home, tmp_path))
    finally:
        assert watcher.signal(signal.SIGTERM) == 0
    for file in files:
        proc = run("--home", str(home.root), "--json", "backup", "verify", str(file))
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert any("scratch database" in c for c in out["checked"]), out
        assert out["counts"]["cases"] >= 3


def test_watch_makes_verified_backups_of_a_postgresql_store(pg_home, tmp_path):
    import signal

    from tests.support.watch import Watcher
    from tests.support.waiting import wait_for

    home, url = pg_home
    usb = tmp_path / "usb"
    home.config.write_text(f"db = {json.dumps(url)}\n[backup]\ndir = \"{usb}\"\nevery = 1\nkeep = 2\n")
    watcher = Watcher(home, tmp_path, "--settle-time", "0", "--no-observer", "--sweep-interval", "0.2")
    try:
        wait_for(lambda: home.log_file.exists() and home.log_file.read_text().count("scheduled backup verified") >= 2,
                 what="two scheduled backups of the PostgreSQL store")
    finally:
        assert watcher.signal(signal.SIGTERM) == 0
    assert "not checked" not in home.log_file.read_text()  # the scratch restore ran each time
    files = [p for p in usb.iterdir() if not p.name.startswith(".")]
    assert 1 <= len(files) <= 2
    for path in files:
        assert run("--home", str(home.root), "backup", "verify", str(path)).returncode == 0, path
    status = json.loads(cli_ok(home, "--json", "status").stdout)
    assert Path(status["backup"]["last_verified"]["file"]) in files and status["backup"]["last_failure"] is None


def test_a_damaged_dump_fails_verify(pg_home, tmp_path):
    home, _url = pg_home
    file = make(home, tmp_path)

    def cut_dump(m):  # a dump cut short, its hash made to match: only pg_restore can tell
        import hashlib

        m[pg.DUMP] = m[pg.DUMP][:40]
        man = json.loads(m[archive.MANIFEST])
        man["members"][pg.DUMP] = hashlib.sha256(m[pg.DUMP]).hexdigest()
        resign(m, home, man)  # as the home itself would sign it: behind the signature, pg_restore tells

    def flipped_dump(m):
        data = bytearray(m[pg.DUMP])
        data[len(data) // 2] ^= 0x01
        m[pg.DUMP] = bytes(data)

    for change, words in ((cut_dump, "dump"), (flipped_dump, "SHA-256")):
        bad = tmp_path / f"{change.__name__}.tar.gz"
        repack(file, bad, change)
        proc = run("--home", str(home.root), "backup", "verify", str(bad))
        assert proc.returncode == 1, (change.__name__, proc.stderr)
        assert words in proc.stderr, (change.__name__, proc.stderr)
        assert_plain_failure(proc)


def test_restore_into_an_empty_database_gives_a_working_home(pg_home, tmp_path, pg_url):
    home, url = pg_home
    checkpoint = tmp_path / "checkpoint.txt"
    checkpoint.write_text(cli_ok(home, "audit", "checkpoint").stdout)
    file = make(home, tmp_path)
    target = new_database(pg_url)
    new = tmp_path / "restored"
    proc = run("restore", str(file), "--home", str(new), "--db", target, "--backup-key", backup_key(home))
    assert proc.returncode == 0, proc.stderr
    assert target not in proc.stdout + proc.stderr
    restored = Home(new)
    assert not restored.db.exists()  # the store is the database, named in the restored config
    assert json.dumps(target) in restored.config.read_text()
    assert run("--home", str(new), "audit", "verify").returncode == 0
    assert run("--home", str(new), "audit", "verify", "--checkpoint", str(checkpoint)).returncode == 0
    old = json.loads(cli_ok(home, "--json", "status").stdout)
    got = json.loads(cli_ok(restored, "--json", "status").stdout)
    for key in ("cases", "headcount_total", "conflicts_open", "cases_by_status", "seen_frames"):
        assert got[key] == old[key], key
    assert cli_ok(restored, "--json", "cases").stdout == cli_ok(home, "--json", "cases").stdout
    # The restored keys sign there at once.
    cli_ok(restored, "retention", "set", "40", "--operator", "alice", "--passphrase-file",
           passfile(tmp_path, "alice"), "--reason", "checked with the site")


def test_restore_over_a_database_that_holds_a_store_is_refused(pg_home, tmp_path, pg_url):
    home, url = pg_home
    file = make(home, tmp_path)
    before = cli_ok(home, "--json", "status").stdout
    for target, words in ((url, "already holds a store"), (None, "not empty")):
        if target is None:
            target = new_database(pg_url)
            import psycopg

            with psycopg.connect(target, autocommit=True) as con:
                con.execute("CREATE TABLE notes (t text)")
        new = tmp_path / f"r-{words[:3]}"
        proc = run("restore", str(file), "--home", str(new), "--db", target, "--backup-key", backup_key(home))
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
        assert_plain_failure(proc)
        assert not new.exists()  # nothing laid out
    assert cli_ok(home, "--json", "status").stdout == before  # nothing changed in the store
    # A PostgreSQL backup without --db is a plain refusal too.
    proc = run("restore", str(file), "--home", str(tmp_path / "r-nodb"), "--backup-key", backup_key(home))
    assert proc.returncode == 2 and "--db" in proc.stderr
    assert not (tmp_path / "r-nodb").exists()


def test_the_password_stays_off_the_command_line(tmp_path):
    """pg_dump and pg_restore get the URL's password through PGPASSWORD, never in argv."""
    conninfo, env = pg.conninfo_and_env("postgresql://ussd:s3cret-pass@db.example:5433/store?sslmode=require")
    assert "s3cret-pass" not in conninfo and env["PGPASSWORD"] == "s3cret-pass"
    assert "dbname=store" in conninfo and "port=5433" in conninfo
    # And a failing tool's words are masked: a server that is not there, reached with a password.
    home = Home(tmp_path / "h").ensure()
    proc = run("--home", str(home.root), "--db", "postgresql://ussd:s3cret-pass@127.0.0.1:1/none", "backup",
               "--to", str(tmp_path / "usb"))
    assert proc.returncode == 2 and "s3cret-pass" not in proc.stderr + proc.stdout
    assert_plain_failure(proc)
    assert not (tmp_path / "usb").exists()  # nothing on the backup disk, not even a folder


def test_pg_tools_see_no_password_in_argv(pg_url, tmp_path, monkeypatch):
    """The argv the tools get, recorded by a stand-in on PATH that then runs the real tool."""
    real = pg.tool("pg_restore")
    shim = tmp_path / "bin"
    shim.mkdir()
    log = tmp_path / "argv.log"
    (shim / "pg_restore").write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nexec {real} \"$@\"\n")
    (shim / "pg_restore").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    url = pg_url.replace("postgres@", "postgres:not-the-real-one@")  # trust auth: any password is let in
    with pytest.raises(pg.PgError):
        pg.restore_into(url, tmp_path / "missing.pgdump")
    assert log.exists() and "not-the-real-one" not in log.read_text()
