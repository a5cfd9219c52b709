"""Crafted backups through the real ``backup verify`` and ``restore``: a small file must not fill the
disk or the memory before it is refused, a member ``restore`` cannot lay out must not verify, and
whatever verifies restores into a home where ``status`` and ``audit verify`` work."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from core.backup import archive
from core.home import Home
from tests.support.backup_craft import MIB, GzTar, listing, manifest_of, measured, members_of, repack, signed
from tests.support.backup_support import backup_key
from tests.support.signing import A1, B2, C1, add_operators, ingest

GIB = 1 << 30
MAX_FILE = 64 * MIB  # no file the check writes may grow past this (RLIMIT_FSIZE in the child)
MAX_VM = 600 * MIB  # address space the child may take (RLIMIT_AS): a normal verify needs far less
MAX_RSS_MB = 200


@pytest.fixture
def home(tmp_path) -> Home:
    h = Home(tmp_path / "home").ensure()
    add_operators(h, tmp_path, "alice", "bob")
    ingest(h, tmp_path, [A1, B2, C1])
    h.config.write_text("[signing]\ncountersign_hours = 48\n")
    return h


@pytest.fixture
def made(home, tmp_path) -> Path:
    proc = measured("--home", str(home.root), "--json", "backup", "--to", str(tmp_path / "usb"))
    assert proc.returncode == 0, proc.stderr
    return Path(json.loads(proc.stdout)["file"])


@pytest.fixture
def anchor(home, made) -> list[str]:
    """The trust anchor verify and restore are given: the fingerprint of the key that signed ``made``."""
    return ["--backup-key", backup_key(home)]


@pytest.fixture
def scratch(tmp_path) -> Path:
    """The child's temporary folder: ``backup verify`` unpacks there."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    return folder


def disk_use(*folders: Path) -> int:
    return sum(p.stat().st_blocks * 512 for f in folders if f.exists() for p in f.rglob("*") if p.is_file())


def refused(result, *words: str) -> None:
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)


def check_both(file: Path, tmp_path: Path, scratch: Path, anchor: list[str], *words: str,
               identity: Path | None = None) -> None:
    """``backup verify`` and ``restore`` both refuse ``file`` (exit 1, ``words`` said, the signature
    not the reason), within the file-size and memory bounds, and leave nothing behind."""
    extra = [*anchor, *(["--identity", str(identity)] if identity else [])]
    env = {"TMPDIR": str(scratch)}
    target = tmp_path / "restored"
    for argv in (["backup", "verify", str(file)], ["restore", str(file), "--home", str(target)]):
        result = measured(*argv, *extra, env=env, max_file=MAX_FILE, max_vm=MAX_VM)
        refused(result, *words)
        assert "not signed" not in result.stderr and "not made by this home" not in result.stderr, result.stderr
        assert result.maxrss_mb < MAX_RSS_MB, (argv[0], result.maxrss_mb)
    assert not target.exists()
    assert disk_use(scratch, tmp_path / "restored") == 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ussd-")]


# -- the disk ------------------------------------------------------------------------------------
def test_an_unlisted_2_gib_member_is_refused_before_a_byte_of_it_is_written(made, tmp_path, scratch, anchor):
    members = members_of(made)
    bad = tmp_path / "unlisted.tar.gz"
    tar = GzTar(bad)
    for name, data in members.items():
        tar.member(name, data)
        if name == archive.MANIFEST:
            tar.zeros("operators/mallory.key", 2 * GIB)
    tar.close()
    assert bad.stat().st_size < 4 * MIB
    check_both(bad, tmp_path, scratch, anchor, "operators/mallory.key", "not listed")


def test_a_member_over_its_listed_size_is_refused_before_it_is_written(made, tmp_path, scratch, anchor):
    members = members_of(made)
    bad = tmp_path / "oversized.tar.gz"
    tar = GzTar(bad)
    for name, data in members.items():
        if name == archive.STORE:
            tar.zeros(name, 2 * GIB)
        else:
            tar.member(name, data)
    tar.close()
    listed = len(members[archive.STORE])
    check_both(bad, tmp_path, scratch, anchor, archive.STORE, "2,147,483,648 bytes", f"lists {listed:,}")


def test_a_small_member_may_not_be_large_even_when_listed(made, tmp_path, scratch, home, anchor):
    members = members_of(made)
    big = b"#" * (2 * MIB)
    members[archive.MANIFEST] = signed(listing(manifest_of(members), archive.CONFIG, big), home)
    members[archive.CONFIG] = big
    check_both(repack(members, tmp_path / "big-config.tar.gz"), tmp_path, scratch, anchor, archive.CONFIG,
               "only the store may be over")


def test_restore_checks_free_space_before_unpacking(made, tmp_path, scratch, home, anchor):
    members = members_of(made)
    manifest = manifest_of(members)
    manifest["sizes"] = {name: len(data) for name, data in members.items() if name != archive.MANIFEST}
    manifest["sizes"][archive.STORE] = 1 << 60  # more than any disk: refused before anything is written
    members[archive.MANIFEST] = signed(manifest, home)
    bad = repack(members, tmp_path / "huge-claim.tar.gz")
    target = tmp_path / "restored"
    result = measured("restore", str(bad), "--home", str(target), *anchor, env={"TMPDIR": str(scratch)},
                      max_file=MAX_FILE, max_vm=MAX_VM)
    assert result.returncode == 2, result.stderr
    assert "not enough free space" in result.stderr and "Traceback" not in result.stderr
    assert not target.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ussd-")]


# -- the memory ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", [tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK],
                         ids=["pax", "gnu-longname", "gnu-longlink"])
def test_a_512_mib_extended_header_is_refused_unread(made, tmp_path, scratch, anchor, kind):
    members = members_of(made)
    bad = tmp_path / "header.tar.gz"
    tar = GzTar(bad)
    for name, data in members.items():
        if name == archive.STORE:
            tar.extended(kind, 512 * MIB)
        tar.member(name, data)
    tar.close()
    assert bad.stat().st_size < 2 * MIB
    check_both(bad, tmp_path, scratch, anchor, "header of 536,870,912 bytes")


@pytest.fixture
def identity(tmp_path) -> tuple[Path, str]:
    from pyrage import x25519

    ident = x25519.Identity.generate()
    path = tmp_path / "backup-identity.txt"
    path.write_text(f"{ident}\n")
    return path, str(ident.to_public())


def test_an_encrypted_backup_is_checked_as_it_is_decrypted(made, tmp_path, scratch, anchor, identity):
    """The same pax header, inside an age file: decrypted as a stream, refused as the plain one."""
    import pyrage
    from pyrage import x25519

    ident_path, recipient = identity
    members = members_of(made)
    plain = tmp_path / "header.tar.gz"
    tar = GzTar(plain)
    for name, data in members.items():
        if name == archive.STORE:
            tar.extended(tarfile.XHDTYPE, 512 * MIB)
        tar.member(name, data)
    tar.close()
    bad = tmp_path / "header.tar.gz.age"
    pyrage.encrypt_file(str(plain), str(bad), [x25519.Recipient.from_str(recipient)])
    plain.unlink()
    check_both(bad, tmp_path, scratch, anchor, "pax header of 536,870,912 bytes", identity=ident_path)


def test_a_huge_age_header_is_refused_unread(tmp_path, scratch, anchor, identity):
    ident_path, _recipient = identity
    bad = tmp_path / "header.tar.gz.age"
    with open(bad, "wb") as fh:
        fh.write(archive.AGE_MAGIC + b"-> X25519 ")
        fh.truncate(300 * MIB)  # sparse: one 300 MiB line that never ends
    check_both(bad, tmp_path, scratch, anchor, "header is over", identity=ident_path)


# -- members restore cannot lay out --------------------------------------------------------------
def _listed_extra(name: str, data: bytes = b"planted\n"):
    def change(members, tar, home):
        members[archive.MANIFEST] = signed(listing(manifest_of(members), name, data), home)
        for n, d in members.items():
            tar.member(n, d)
            if n == archive.MANIFEST:
                tar.member(name, data)
    return change


def _special(name: str, replaces: str | None = None, **fields):
    def change(members, tar, home):
        for n, d in members.items():
            if n == replaces:
                continue
            tar.member(n, d)
            if n == archive.MANIFEST:
                tar.member(name, b"", **fields)
    return change


def _file_before_folder(members, tar, home):
    data = b"not a folder\n"
    members[archive.MANIFEST] = signed(listing(manifest_of(members), "operators", data), home)
    for n, d in members.items():
        if n == "operators/alice.key":
            tar.member("operators", data)
        tar.member(n, d)


def _twice(members, tar, home):
    for n, d in members.items():
        tar.member(n, d)
    tar.member("operators/alice.key", members["operators/alice.key"])


def _manifest_not_first(members, tar, home):
    items = list(members.items())
    for n, d in items[1:2] + items[:1] + items[2:]:
        tar.member(n, d)


CRAFTED = {
    "inbox-as-a-file": (_listed_extra("inbox"), "'inbox'"),
    "logs-as-a-file": (_listed_extra("logs"), "'logs'"),
    "dot-folder": (_special(".", type=tarfile.DIRTYPE), "'.'"),
    "dot-file": (_listed_extra("."), "'.'"),
    "operators-a-file-first": (_file_before_folder, "'operators'"),
    "operators-a-folder": (_special("operators", type=tarfile.DIRTYPE), "'operators'"),
    "absolute": (_listed_extra("/tmp/planted.key"), "'/tmp/planted.key'"),
    "dot-dot": (_listed_extra("../planted.key"), "'../planted.key'"),
    "dot-dot-inside": (_listed_extra("operators/../config.toml"), "'operators/../config.toml'"),
    "nested": (_listed_extra("operators/sub/x.key"), "'operators/sub/x.key'"),
    "hidden-key": (_listed_extra("operators/.x.key"), "'operators/.x.key'"),
    "dot-slash": (_listed_extra("./config.toml"), "'./config.toml'"),
    "symlink": (_special("operators/bob.key", replaces="operators/bob.key", type=tarfile.SYMTYPE,
                         linkname="/etc/passwd"), "symbolic link"),
    "hard-link": (_special("operators/carol.key", type=tarfile.LNKTYPE, linkname="receiver.db"), "hard link"),
    "device": (_special("operators/null", type=tarfile.CHRTYPE, devmajor=1, devminor=3), "device"),
    "fifo": (_special("operators/pipe", type=tarfile.FIFOTYPE), "FIFO"),
    "twice": (_twice, "twice"),
    "manifest-not-first": (_manifest_not_first, "does not start with its manifest"),
}


@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_member_restore_cannot_lay_out_does_not_verify(made, tmp_path, scratch, home, anchor, case):
    change, words = CRAFTED[case]
    members = members_of(made)
    bad = tmp_path / f"{case}.tar.gz"
    tar = GzTar(bad)
    change(members, tar, home)
    tar.close()
    check_both(bad, tmp_path, scratch, anchor, words)


# -- whatever verifies restores ------------------------------------------------------------------
def _plain(made, tmp_path, identity, home):
    return made, []


def _encrypted(made, tmp_path, identity, home):
    import pyrage
    from pyrage import x25519

    ident_path, recipient = identity
    file = tmp_path / (made.name + ".age")
    pyrage.encrypt_file(str(made), str(file), [x25519.Recipient.from_str(recipient)])
    return file, ["--identity", str(ident_path)]


def _without_config(made, tmp_path, identity, home):
    members = members_of(made)
    del members[archive.CONFIG]
    manifest = manifest_of(members)
    del manifest["members"][archive.CONFIG]
    manifest.get("sizes", {}).pop(archive.CONFIG, None)
    members[archive.MANIFEST] = signed(manifest, home)
    return repack(members, tmp_path / "no-config.tar.gz"), []


def _without_sizes(made, tmp_path, identity, home):
    """As made before the manifest listed sizes."""
    members = members_of(made)
    manifest = manifest_of(members)
    manifest.pop("sizes", None)
    members[archive.MANIFEST] = signed(manifest, home)
    return repack(members, tmp_path / "no-sizes.tar.gz"), []


def _with_pax_headers(made, tmp_path, identity, home):
    """Each member with a small pax header (as tar writes for a long name or a store over 8 GiB)."""
    return repack(members_of(made), tmp_path / "pax.tar.gz", pax={"comment": "é" * 40, "uname": "opérateur"}), []


def _gnu_format(made, tmp_path, identity, home):
    return repack(members_of(made), tmp_path / "gnu.tar.gz", fmt=tarfile.GNU_FORMAT), []


def _with_db_line(made, tmp_path, identity, home):
    members = members_of(made)
    config = b'db = "elsewhere.db"\n' + members[archive.CONFIG]
    members[archive.CONFIG] = config
    members[archive.MANIFEST] = signed(listing(manifest_of(members), archive.CONFIG, config), home)
    return repack(members, tmp_path / "db-line.tar.gz"), []


ACCEPTED = [_plain, _encrypted, _without_config, _without_sizes, _with_pax_headers, _gnu_format, _with_db_line]


@pytest.mark.parametrize("variety", ACCEPTED, ids=[f.__name__.strip("_") for f in ACCEPTED])
def test_every_backup_verify_accepts_restores_into_a_working_home(made, tmp_path, scratch, home, anchor, identity,
                                                                 variety):
    file, extra = variety(made, tmp_path, identity, home)
    extra = [*extra, *anchor]
    env = {"TMPDIR": str(scratch)}
    result = measured("backup", "verify", str(file), *extra, env=env, max_vm=MAX_VM)
    assert result.returncode == 0, result.stderr
    assert result.maxrss_mb < MAX_RSS_MB
    new = tmp_path / "restored"
    result = measured("restore", str(file), "--home", str(new), *extra, env=env, max_vm=MAX_VM)
    assert result.returncode == 0, result.stderr
    assert result.maxrss_mb < MAX_RSS_MB
    for argv in (["status"], ["audit", "verify"], ["--json", "cases"]):
        result = measured("--home", str(new), *argv)
        assert result.returncode == 0, (argv, result.stderr)
    keys = sorted(n.split("/", 1)[1] for n in members_of(made) if n.startswith("operators/"))
    assert "alice.key" in keys and sorted(p.name for p in (new / "operators").iterdir()) == keys
    assert disk_use(scratch) == 0


def test_a_damaged_encrypted_backup_says_so_as_it_streams(made, tmp_path, identity, anchor):
    """Decrypted as it is read: a flipped byte or a cut-off end is the age file's damage, named as
    such, and another's identity is exit 2."""
    import pyrage
    from pyrage import x25519

    ident_path, recipient = identity
    enc = tmp_path / "good.tar.gz.age"
    pyrage.encrypt_file(str(made), str(enc), [x25519.Recipient.from_str(recipient)])
    data = enc.read_bytes()
    middle = len(data) // 2
    for label, bad in (("flipped", data[:middle] + bytes([data[middle] ^ 1]) + data[middle + 1:]),
                       ("cut", data[:-100])):
        file = tmp_path / f"{label}.tar.gz.age"
        file.write_bytes(bad)
        for argv in (["backup", "verify", str(file)], ["restore", str(file), "--home", str(tmp_path / "r")]):
            refused(measured(*argv, "--identity", str(ident_path), *anchor), "encrypted backup is damaged")
        assert not (tmp_path / "r").exists()
    other = tmp_path / "other-identity.txt"
    other.write_text(f"{x25519.Identity.generate()}\n")
    result = measured("backup", "verify", str(enc), "--identity", str(other), *anchor)
    assert result.returncode == 2 and "other keys" in result.stderr


def test_backup_leaves_out_a_key_folder_file_whose_name_verify_would_refuse(home, tmp_path):
    """An editor's leftover in operators/ never makes every backup of the home fail its check."""
    (home.operators / "alice.key~").write_text("an editor's copy\n")
    (home.operators / "notes for bob.txt").write_text("a note\n")
    proc = measured("--home", str(home.root), "--json", "backup", "--to", str(tmp_path / "usb"))
    assert proc.returncode == 0, proc.stderr
    file = Path(json.loads(proc.stdout)["file"])
    names = set(members_of(file))
    assert "operators/alice.key" in names and not {"operators/alice.key~", "operators/notes for bob.txt"} & names
    assert measured("--home", str(home.root), "backup", "verify", str(file)).returncode == 0
