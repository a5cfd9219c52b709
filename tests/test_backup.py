"""Backups through the real command line and a real ``watch``: made while the receiver runs,
verified, broken on purpose, restored into a new home, encrypted, killed half way, scheduled."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from core.backup import archive
from core.home import Home
from core.signing.checkpoint import Checkpoint
from tests.support.helpers import ROOT, frame
from tests.support.inbox_helpers import drop, frame_lines, text_of, wait_for
from tests.support.signing import A1, A1_FIX, B2, C1, add_operators, ingest, quarantine_id, sign
from tests.support.watch import Watcher
from tests.support.backups import assert_plain_failure, repack, run
from tests.support.backup_support import backup_key, resign


@pytest.fixture
def home(tmp_path) -> Home:
    """A home with operators, cases, a correction resolved by a signature and a status change."""
    h = Home(tmp_path / "home").ensure()
    add_operators(h, tmp_path, "alice", "bob")
    ingest(h, tmp_path, [A1, B2, C1])
    ingest(h, tmp_path, [A1_FIX], name="fix.txt")
    qid = quarantine_id(h, "A-1", A1_FIX[1])
    assert sign(h, tmp_path, "resolve", str(qid), "--accept-correction") == 0
    return h


def make(home: Home, *flags: str) -> Path:
    proc = run("--home", str(home.root), "--json", "backup", *flags)
    assert proc.returncode == 0, proc.stderr
    return Path(json.loads(proc.stdout)["file"])


def checkpoint_file(home: Home, tmp_path: Path) -> Path:
    proc = run("--home", str(home.root), "audit", "checkpoint")
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "checkpoint.txt"
    path.write_text(proc.stdout)
    return path


def test_backup_taken_while_watch_takes_files_verifies(home, tmp_path):
    """The sweep alone takes the files in (no inotify watch: the shared test machine runs out of them)."""
    watcher = Watcher(home, tmp_path, "--settle-time", "0", "--no-observer", "--sweep-interval", "0.2")
    try:
        for i in range(5):
            drop(home, f"live-{i}.txt", text_of(frame_lines(f"L{i}", 300)))
        file = make(home)
        assert oct(file.stat().st_mode & 0o777) == "0o600"
        assert file.parent == home.root / "backups"
        check = run("--home", str(home.root), "--json", "backup", "verify", str(file))
        assert check.returncode == 0, check.stderr
        assert json.loads(check.stdout)["counts"]["cases"] >= 3
    finally:
        assert watcher.signal(signal.SIGTERM) == 0


def test_plain_backup_says_it_is_not_encrypted(home):
    proc = run("--home", str(home.root), "backup")
    assert proc.returncode == 0, proc.stderr
    # One line says so (the next, that the home's backup key is not recorded yet, is about the origin).
    assert len([line for line in proc.stderr.splitlines() if "NOT encrypted" in line]) == 1


def test_flipped_byte_and_cut_short_copy_fail_with_exit_1(home, tmp_path):
    file = make(home, "--to", str(tmp_path / "usb"))
    data = file.read_bytes()
    for i, where in enumerate((len(data) // 3, len(data) // 2, len(data) - 10)):
        flipped = tmp_path / f"flipped-{i}.tar.gz"
        flipped.write_bytes(data[:where] + bytes([data[where] ^ 0x01]) + data[where + 1:])
        proc = run("--home", str(home.root), "backup", "verify", str(flipped))
        assert proc.returncode == 1, (where, proc.stdout, proc.stderr)
        assert_plain_failure(proc)
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: len(data) // 2])
    proc = run("--home", str(home.root), "backup", "verify", str(cut))
    assert proc.returncode == 1 and "cut short" in proc.stderr
    assert_plain_failure(proc)
    assert run("--home", str(home.root), "backup", "verify", str(file)).returncode == 0


def _manifest(members: dict) -> dict:
    return json.loads(members[archive.MANIFEST])


def test_member_hash_store_checks_and_checkpoint_are_each_verified(home, tmp_path):
    """Behind the manifest's signature (a changed manifest is signed again with the home's own key
    here, as only the home can), each member's hash, the store and the checkpoint are checked."""
    file = make(home, "--to", str(tmp_path / "usb"))

    def config_changed(m):  # its listed size made to match: only the hash tells
        m["config.toml"] = m.get("config.toml", b"") + b"\n# edited\n"
        man = _manifest(m)
        man["members"].setdefault("config.toml", "0" * 64)
        man["sizes"]["config.toml"] = len(m["config.toml"])
        resign(m, home, man)

    def store_corrupt(m):
        db = bytearray(m[archive.STORE])
        page = int.from_bytes(db[16:18], "big")
        for at in range(page, page + 12):  # the second page's b-tree header: damaged, hash made to match
            db[at] ^= 0xFF
        m[archive.STORE] = bytes(db)
        man = _manifest(m)
        import hashlib

        man["members"][archive.STORE] = hashlib.sha256(bytes(db)).hexdigest()
        resign(m, home, man)

    def other_checkpoint(m):
        man = _manifest(m)
        man["checkpoint"] = Checkpoint(man["counts"]["audit_entries"], "ab" * 32, {"alice": "cd" * 32}).line()
        resign(m, home, man)

    def key_missing(m):
        name = next(n for n in m if n.startswith("operators/"))
        del m[name]

    for change, words in ((config_changed, "SHA-256"), (store_corrupt, "store"),
                          (other_checkpoint, "checkpoint"), (key_missing, "missing")):
        bad = tmp_path / f"{change.__name__}.tar.gz"
        repack(file, bad, change)
        proc = run("--home", str(home.root), "backup", "verify", str(bad))
        assert proc.returncode == 1, (change.__name__, proc.stderr)
        assert words in proc.stderr, (change.__name__, proc.stderr)
        assert_plain_failure(proc)


def test_verify_that_cannot_run_is_exit_2(tmp_path):
    proc = run("backup", "verify", str(tmp_path / "nothing.tar.gz"))
    assert proc.returncode == 2 and "no backup file" in proc.stderr
    assert_plain_failure(proc)


def test_restore_gives_a_home_whose_audit_and_checkpoint_verify(home, tmp_path):
    before = checkpoint_file(home, tmp_path)
    assert sign(home, tmp_path, "case", "mark", "B-2", "dispatched") == 0  # more history after the checkpoint
    file = make(home, "--to", str(tmp_path / "usb"))
    new = tmp_path / "restored"
    proc = run("restore", str(file), "--home", str(new), "--backup-key", backup_key(home))
    assert proc.returncode == 0, proc.stderr
    assert run("--home", str(new), "audit", "verify").returncode == 0
    assert run("--home", str(new), "audit", "verify", "--checkpoint", str(before)).returncode == 0
    old = json.loads(run("--home", str(home.root), "--json", "status").stdout)
    got = json.loads(run("--home", str(new), "--json", "status").stdout)
    for key in ("cases", "headcount_total", "conflicts_open", "cases_by_status", "seen_frames"):
        assert got[key] == old[key], key
    cases_old = run("--home", str(home.root), "--json", "cases").stdout
    assert run("--home", str(new), "--json", "cases").stdout == cases_old  # corrections and statuses with them
    keys = sorted(p.name for p in (new / "operators").iterdir())
    assert keys == sorted(p.name for p in home.operators.iterdir())
    # The restored keys sign: the console's signing works there at once.
    assert sign(Home(new), tmp_path, "retention", "set", "40") == 0


def test_restore_over_a_live_home_is_refused_and_changes_nothing(home, tmp_path):
    file = make(home, "--to", str(tmp_path / "usb"))
    ingest(home, tmp_path, [("D-1", frame(1, "Hagadera", "FOO", 2, 50))], name="more.txt")

    def listing():
        return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in home.root.rglob("*")
                if p.is_file() and "run" not in p.parts and "logs" not in p.parts}

    seen = listing()
    proc = run("restore", str(file), "--home", str(home.root))
    assert proc.returncode == 2 and "already holds a store" in proc.stderr
    assert_plain_failure(proc)
    assert listing() == seen


@pytest.fixture
def identity(tmp_path) -> tuple[Path, str]:
    from pyrage import x25519

    ident = x25519.Identity.generate()
    path = tmp_path / "offline" / "backup-identity.txt"
    path.parent.mkdir()
    path.write_text(f"# created for a test\n{ident}\n")
    return path, str(ident.to_public())


def test_encrypted_backup_hides_everything_and_age_reads_it(home, tmp_path, identity):
    ident_path, recipient = identity
    home.config.write_text(f'[backup]\nrecipients = ["{recipient}"]\n')
    proc = run("--home", str(home.root), "--json", "backup", "--to", str(tmp_path / "usb"))
    assert proc.returncode == 0, proc.stderr
    assert "NOT encrypted" not in proc.stderr
    file = Path(json.loads(proc.stdout)["file"])
    data = file.read_bytes()
    assert data.startswith(b"age-encryption.org/v1\n")
    for secret in (b"Kakuma1", b"Dadaab", b"SQLite format 3", b"alice", b"\x1f\x8b\x08"):
        assert secret not in data, secret
    age = shutil.which("age")
    if age is None:
        pytest.skip("Debian's age tool is not installed (scripts/ensure-age installs it for make test)")
    out = subprocess.run([age, "--decrypt", "-i", str(ident_path), str(file)], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    with tarfile.open(fileobj=io.BytesIO(out.stdout), mode="r:gz") as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile(archive.MANIFEST).read())
    assert archive.STORE in names and manifest["counts"]["cases"] == 3
    # Without the identity: a one-line error, exit 2; with it, verify and restore work.
    for argv in (("backup", "verify", str(file)), ("restore", str(file), "--home", str(tmp_path / "r0"))):
        proc = run(*argv)
        assert proc.returncode == 2 and "--identity" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r0").exists()
    assert run("--home", str(home.root), "backup", "verify", str(file), "--identity", str(ident_path)).returncode == 0
    proc = run("restore", str(file), "--home", str(tmp_path / "r1"), "--identity", str(ident_path),
               "--backup-key", backup_key(home))
    assert proc.returncode == 0, proc.stderr
    assert run("--home", str(tmp_path / "r1"), "audit", "verify").returncode == 0


def test_bad_backup_settings_name_their_key(home):
    for text, key in (('[backup]\nevery = "often"\n', "every"), ("[backup]\nkeep = 0\n", "keep"),
                      ('[backup]\nrecipients = ["age1nonsense"]\n', "recipients"), ("[backup]\nkept = 3\n", "kept")):
        home.config.write_text(text)
        proc = run("--home", str(home.root), "backup")
        assert proc.returncode == 2 and key in proc.stderr, (text, proc.stderr)
        assert_plain_failure(proc)
        proc = run("--home", str(home.root), "watch")
        assert proc.returncode == 2 and key in proc.stderr, (text, proc.stderr)


@pytest.mark.parametrize("step", ["snapshot", "written", "encrypted", "renamed"])
def test_a_backup_killed_at_any_moment_leaves_no_bad_file_under_a_final_name(home, tmp_path, identity, step):
    ident_path, recipient = identity
    if step == "encrypted":
        home.config.write_text(f'[backup]\nrecipients = ["{recipient}"]\n')
    holds = tmp_path / "holds"
    holds.mkdir()
    usb = tmp_path / "usb"
    proc = subprocess.Popen([sys.executable, "-m", "console.cli", "--home", str(home.root), "backup", "--to",
                             str(usb)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, archive.HOLD_ENV: str(holds)})
    try:
        def reached():
            _releaser(holds, step)  # every earlier step goes on at once; this one waits to be killed
            return next(holds.glob(f"{proc.pid}-{step}.held"), None) or (proc.poll() is not None and "exited")
        assert wait_for(reached, what=f"the backup to reach {step}") != "exited"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    if step == "encrypted":  # nothing readable is left on the backup disk by a killed encrypted backup
        for path in usb.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert b"SQLite format 3" not in data and b"\x1f\x8b\x08" not in data, path
    finals = [p for p in usb.iterdir() if not p.name.startswith(".")] if usb.exists() else []
    for path in finals:
        args = ["--home", str(home.root), "backup", "verify", str(path)] + \
            (["--identity", str(ident_path)] if step == "encrypted" else [])
        assert run(*args).returncode == 0, path
    assert bool(finals) == (step == "renamed")


def _releaser(holds: Path, keep: str):
    """Hold points other than ``keep`` are let go at once (used by the kill test's waiting loop)."""
    for marker in holds.glob("*.held"):
        if not marker.name.endswith(f"-{keep}.held"):
            marker.unlink(missing_ok=True)


def test_watch_makes_verified_backups_on_schedule_and_keeps_only_keep(home, tmp_path):
    usb = tmp_path / "usb"
    home.config.write_text(f'[backup]\ndir = "{usb}"\nevery = 1\nkeep = 2\n')
    watcher = Watcher(home, tmp_path, "--settle-time", "0", "--no-observer", "--sweep-interval", "0.2")
    try:
        drop(home, "live.txt", text_of(frame_lines("W", 200)))

        def made():
            log = home.log_file.read_text() if home.log_file.exists() else ""
            return log.count("scheduled backup verified") >= 4
        wait_for(made, what="four scheduled backups")
    finally:
        assert watcher.signal(signal.SIGTERM) == 0
    files = [p for p in usb.iterdir() if not p.name.startswith(".")]
    assert 1 <= len(files) <= 2, files
    for path in files:
        assert run("--home", str(home.root), "backup", "verify", str(path)).returncode == 0, path
    status = json.loads(run("--home", str(home.root), "--json", "status").stdout)
    last = status["backup"]["last_verified"]
    assert Path(last["file"]) in files
    assert last["size"] == Path(last["file"]).stat().st_size and last["at"] > 0
    assert status["backup"]["last_failure"] is None and status["backup"]["keep"] == 2
    text = run("--home", str(home.root), "status").stdout
    assert "backups: last verified" in text and Path(last["file"]).name in text.replace("\n", "")


def test_failed_scheduled_backup_is_a_fault_and_an_alert(home, tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the backup folder should be")
    home.config.write_text(f'[backup]\ndir = "{blocked}"\nevery = 1\n')
    watcher = Watcher(home, tmp_path, "--settle-time", "0", "--no-observer", "--sweep-interval", "0.2")
    try:
        def faulted():
            s = json.loads(run("--home", str(home.root), "--json", "status").stdout)
            return s if any("backup failed" in f for f in s["health"]["faults"]) else None
        status = wait_for(faulted, what="the backup fault in status")
        assert status["backup"]["last_failure"]["why"]
        assert status["backup"]["fault"].startswith("backup failed")
        from core import Receiver
        from core.store.outbox import outbox_models

        with Receiver(str(home.db)) as r:
            E = outbox_models(r.db).AlertEvent
            kinds = [(e.kind, e.summary) for e in E.select()]
        assert any("backup" in summary for kind, summary in kinds if kind == "fault"), kinds
    finally:
        assert watcher.signal(signal.SIGTERM) == 0


def test_overdue_backup_is_a_fault_in_status(home, tmp_path):
    """A scheduled backup that never finishes (held at its first step) leaves backups overdue."""
    holds = tmp_path / "holds"
    holds.mkdir()
    home.config.write_text(f'[backup]\ndir = "{tmp_path / "usb"}"\nevery = 1\n')
    watcher = Watcher(home, tmp_path, "--settle-time", "0", "--no-observer", "--sweep-interval", "0.2", env={archive.HOLD_ENV: str(holds)})
    try:
        def overdue():
            s = json.loads(run("--home", str(home.root), "--json", "status").stdout)
            return s if any("backup overdue" in f for f in s["health"]["faults"]) else None
        status = wait_for(overdue, what="the overdue fault in status")
        assert status["backup"]["last_verified"] is None
        assert list(holds.glob("*-snapshot.held"))
    finally:
        assert watcher.signal(signal.SIGTERM) == 0


def test_an_unreachable_postgresql_store_is_one_plain_line_not_a_half_backup(home, tmp_path):
    proc = run("--home", str(home.root), "--db", "postgresql://nobody@127.0.0.1:1/none", "backup",
               "--to", str(tmp_path / "usb"))
    assert proc.returncode == 2 and "PostgreSQL" in proc.stderr
    assert_plain_failure(proc)
    assert not (tmp_path / "usb").exists()


def test_restore_of_a_sqlite_backup_into_a_database_is_refused(home, tmp_path):
    """--db on restore names an empty PostgreSQL database; a SQLite backup goes into the home."""
    file = make(home, "--to", str(tmp_path / "usb"))
    for db, words in (("postgresql://nobody@127.0.0.1:1/none", "SQLite store"), (str(tmp_path / "x.db"), "PostgreSQL")):
        proc = run("restore", str(file), "--home", str(tmp_path / "r"), "--db", db, "--backup-key", backup_key(home))
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
        assert_plain_failure(proc)
        assert not (tmp_path / "r").exists()


def test_a_backup_verified_by_hand_is_verified_in_status_as_on_the_retention_screen(home, tmp_path, identity):
    from core.backup.schedule import listing

    ident_path, recipient = identity
    home.config.write_text(f'[backup]\nrecipients = ["{recipient}"]\n')
    file = make(home)
    assert file.parent == home.root / "backups"
    before = json.loads(run("--home", str(home.root), "--json", "status").stdout)["backup"]
    assert before["last_verified"] is None  # made by hand: not verified until checked
    proc = run("backup", "verify", str(file), "--home", str(home.root), "--identity", str(ident_path))
    assert proc.returncode == 0, proc.stderr
    [row] = listing(home).rows
    assert row.file == file.name and row.verified
    last = json.loads(run("--home", str(home.root), "--json", "status").stdout)["backup"]["last_verified"]
    assert last is not None and Path(last["file"]) == file and last["size"] == file.stat().st_size
    text = run("--home", str(home.root), "status").stdout.replace("\n", "")
    assert "backups: last verified" in text and file.name in text and "none verified yet" not in text
