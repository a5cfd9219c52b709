"""Which home made a backup, through the real command line and a real ``watch``: a backup whose
config.toml or key files were rewritten (their SHA-256 values recomputed, as anyone can) is refused
by ``backup verify`` and ``restore``; a genuine one restores with its alerts paused until an admin
signs ``alerts resume``; a backup made before manifests were signed is refused in words."""

from __future__ import annotations

import hashlib
import json
import signal
from pathlib import Path

import pytest

from core.backup import archive, origin
from core.home import Home
from tests.support.alert_targets import CommandTarget
from tests.support.backup_support import backup_key
from tests.support.console_support import fixed_app, press_and_settle, run_async
from tests.support.signing import A1, A1_FIX, B2, C1, add_operators, ingest, quarantine_id, sign
from tests.support.backups import assert_plain_failure, repack as _repack, run
from tests.support.watch import Watcher
from tests.support.waiting import until, wait_for

COUNTERSIGN = '[signing]\ncountersign = ["operator"]\n'


@pytest.fixture
def home(tmp_path) -> Home:
    """A home with two admins, cases, a signed resolution, a config.toml, and its backup key recorded."""
    h = Home(tmp_path / "home").ensure()
    add_operators(h, tmp_path, "alice", "bob")
    ingest(h, tmp_path, [A1, B2, C1])
    ingest(h, tmp_path, [A1_FIX], name="fix.txt")
    assert sign(h, tmp_path, "resolve", str(quarantine_id(h, "A-1", A1_FIX[1])), "--accept-correction") == 0
    h.config.write_text(COUNTERSIGN)
    assert sign(h, tmp_path, "backup", "key", "record", reason="this machine's backup key") == 0
    return h


def make(home: Home, folder: Path) -> Path:
    proc = run("--home", str(home.root), "--json", "backup", "--to", str(folder))
    assert proc.returncode == 0, proc.stderr
    return Path(json.loads(proc.stdout)["file"])


def checkpoint_line(home: Home) -> str:
    proc = run("--home", str(home.root), "audit", "checkpoint")
    assert proc.returncode == 0, proc.stderr
    [line] = [line for line in proc.stdout.splitlines() if line.startswith("ussd-checkpoint")]
    return line


def rewritten(file: Path, dest: Path, change) -> Path:
    """The attack: members changed, their SHA-256 values in the manifest recomputed, nothing else."""
    def apply(members):
        change(members)
        manifest = json.loads(members[archive.MANIFEST])
        manifest["members"] = {name: hashlib.sha256(data).hexdigest() for name, data in members.items()
                               if name != archive.MANIFEST}
        members[archive.MANIFEST] = json.dumps(manifest).encode()
    _repack(file, dest, apply)
    return dest


def planted_command(members):
    members[archive.CONFIG] = b'[alerts]\ncommand = "/bin/sh -c \\"touch /tmp/ussd-planted\\""\n'


def countersign_dropped(members):
    members[archive.CONFIG] = members[archive.CONFIG].replace(b'countersign = ["operator"]', b"")


def key_swapped(members):
    members["operators/alice.key"], members["operators/bob.key"] = \
        members["operators/bob.key"], members["operators/alice.key"]


@pytest.mark.parametrize("change", [planted_command, countersign_dropped, key_swapped])
def test_a_rewritten_backup_is_refused_by_verify_and_restore(home, tmp_path, change):
    file = make(home, tmp_path / "usb")
    line = checkpoint_line(home)
    assert " backup=" in line  # the checkpoint carries the home's backup key
    bad = rewritten(file, tmp_path / f"{change.__name__}.tar.gz", change)
    proc = run("--home", str(home.root), "backup", "verify", str(bad))
    assert proc.returncode == 1 and "not made by this home" in proc.stderr, proc.stderr
    assert_plain_failure(proc)
    new = tmp_path / "restored"
    for anchor in (("--checkpoint", line), ("--backup-key", backup_key(home))):
        proc = run("restore", str(bad), "--home", str(new), *anchor)
        assert proc.returncode == 1 and "not made by this home" in proc.stderr, (anchor, proc.stderr)
        assert_plain_failure(proc)
        assert not new.exists()
    # The genuine file passes both, so it is the rewrite that is refused.
    assert run("--home", str(home.root), "backup", "verify", str(file)).returncode == 0


def test_a_backup_signed_again_with_another_key_is_not_this_homes(home, tmp_path):
    """Whoever rewrites the backup may sign it with a key of their own: the home does not know that key."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    file = make(home, tmp_path / "usb")
    mine = Ed25519PrivateKey.generate()

    def planted_and_signed(members):
        planted_command(members)
        man = json.loads(members[archive.MANIFEST])
        man["members"][archive.CONFIG] = hashlib.sha256(members[archive.CONFIG]).hexdigest()
        man = {k: v for k, v in man.items() if k not in ("signature", "backup_key")}
        members[archive.MANIFEST] = json.dumps(origin.sign(man, mine)).encode()

    bad = tmp_path / "resigned.tar.gz"
    _repack(file, bad, planted_and_signed)
    proc = run("--home", str(home.root), "backup", "verify", str(bad))
    assert proc.returncode == 1 and "not made by this home" in proc.stderr and "not this home's" in proc.stderr
    proc = run("restore", str(bad), "--home", str(tmp_path / "r"), "--checkpoint", checkpoint_line(home))
    assert proc.returncode == 1 and "not made by this home" in proc.stderr, proc.stderr
    assert not (tmp_path / "r").exists()


def test_a_backup_made_before_manifests_were_signed_is_refused_in_words(home, tmp_path):
    file = make(home, tmp_path / "usb")

    def unsigned(members):  # as this version's predecessors wrote it: no key, no signature
        man = json.loads(members[archive.MANIFEST])
        for name in ("signature", "backup_key", "home_id", "audit_head"):
            man.pop(name)
        members[archive.MANIFEST] = json.dumps(man).encode()

    old = tmp_path / "old.tar.gz"
    _repack(file, old, unsigned)
    proc = run("--home", str(home.root), "backup", "verify", str(old))
    assert proc.returncode == 1 and "manifest not signed" in proc.stderr and "--accept-unsigned" in proc.stderr
    proc = run("restore", str(old), "--home", str(tmp_path / "r"), "--checkpoint", checkpoint_line(home))
    assert proc.returncode == 1 and "manifest not signed" in proc.stderr
    assert not (tmp_path / "r").exists()
    # With no other copy left, the admin may restore it on purpose: its alerts start paused.
    proc = run("restore", str(old), "--home", str(tmp_path / "r"), "--accept-unsigned")
    assert proc.returncode == 0, proc.stderr
    assert "not signed" in proc.stderr and "alert targets are paused" in proc.stdout
    status = json.loads(run("--home", str(tmp_path / "r"), "--json", "status").stdout)
    assert status["alerts_paused"]["restored_from"] == "old.tar.gz"


def test_a_genuine_backup_restores_and_watch_sends_nothing_until_an_admin_resumes(home, tmp_path):
    target = CommandTarget(tmp_path / "target")
    home.config.write_text(COUNTERSIGN + f"[alerts]\ncommand = {json.dumps(target.argv)}\n")
    from core import Receiver
    from core.rules import events
    from core.store.outbox import record_now

    with Receiver(str(home.db)) as r:  # an alert the home had not sent yet when the backup was made
        record_now(r.db, [events.fault("inbox", "carried in the backup", 0.0)])
    file = make(home, tmp_path / "usb")
    new = Home(tmp_path / "restored")
    proc = run("restore", str(file), "--home", str(new.root), "--checkpoint", checkpoint_line(home))
    assert proc.returncode == 0, proc.stderr
    status = json.loads(run("--home", str(new.root), "--json", "status").stdout)
    assert status["alerts_paused"]["restored_from"] == file.name
    assert "alert targets PAUSED" in run("--home", str(new.root), "status").stdout.replace("\n", " ")
    proc = run("--home", str(new.root), "alerts", "test")
    assert proc.returncode == 2 and "PAUSED" in proc.stderr and not target.calls()

    watcher = Watcher(new, tmp_path, "--settle-time", "0", "--no-observer", "--sweep-interval", "0.2")
    try:
        wait_for(lambda: "alerts to command are paused" in new.log_file.read_text(), what="the pause in the log")
        assert target.calls() == []  # the first pass found the pause before sending anything
        assert sign(new, tmp_path, "alerts", "resume", reason="read [alerts] after the restore") == 0
        delivered = wait_for(lambda: [e for e in target.delivered() if e["summary"].endswith("carried in the backup")
                                      or "carried in the backup" in json.dumps(e)], what="the carried alert, sent")
        assert delivered
    finally:
        assert watcher.signal(signal.SIGTERM) == 0
    status = json.loads(run("--home", str(new.root), "--json", "status").stdout)
    assert status["alerts_paused"] is None
    assert not (new.root / "alerts-paused.json").exists()
    proc = run("--home", str(new.root), "audit", "verify")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Resuming twice signs nothing.
    assert sign(new, tmp_path, "alerts", "resume", reason="again") == 2


def test_restore_needs_a_trust_anchor_and_an_old_checkpoint_says_why(home, tmp_path):
    file = make(home, tmp_path / "usb")
    proc = run("restore", str(file), "--home", str(tmp_path / "r"))
    assert proc.returncode == 2 and "--checkpoint" in proc.stderr and "--backup-key" in proc.stderr
    assert_plain_failure(proc)
    old = "ussd-checkpoint v1 entries=1 head=0123456789abcdef op:alice=0123456789abcdef"
    old += f" check={hashlib.sha256(old.encode()).hexdigest()[:6]}"
    proc = run("restore", str(file), "--home", str(tmp_path / "r"), "--checkpoint", old)
    assert proc.returncode == 2 and "carries no backup key" in proc.stderr
    assert not (tmp_path / "r").exists()


@run_async
async def test_the_console_header_says_alerts_are_paused_on_a_restored_home(sample_home):
    from console.widgets.header_bar import HeaderBar
    from core.alerts.pause import write_marker

    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot)
        assert "ALERTS PAUSED" not in app.query_one(HeaderBar).render().plain
        write_marker(sample_home.root, "ussd-backup-20261202T101600Z.tar.gz", 0.0)
        app.query_one(HeaderBar)._check_backups()
        await until(lambda: "ALERTS PAUSED" in app.query_one(HeaderBar).render().plain, what="the pause in the header")


def test_the_checkpoint_carries_the_backup_key_and_audit_verify_checks_it(home, tmp_path):
    from core.signing.checkpoint import parse

    line = checkpoint_line(home)
    cp = parse(line)
    assert backup_key(home).startswith(cp.backup)
    kept = tmp_path / "checkpoint.txt"
    kept.write_text(line + "\n")
    assert run("--home", str(home.root), "audit", "verify", "--checkpoint", str(kept)).returncode == 0
    other = cp._replace(backup="0" * 16).line()  # a well-formed line naming another backup key
    kept.write_text(other + "\n")
    proc = run("--home", str(home.root), "audit", "verify", "--checkpoint", str(kept))
    assert proc.returncode == 1 and "backup key replaced" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
