"""Every example line of every command's ``--help`` is run, in the order the helps list them, on
one prepared home, as a new admin copies them: none may end in a usage error, and each that can
be done on a test home exits 0. In-process (``console.cli.main``), with the passphrase prompt
answered by the operator's passphrase; only the commands that run until stopped (the console,
``watch``, ``serve``, the demo) are parsed and not run."""

from __future__ import annotations

import os
import re
import shutil
import shlex
import sys

import pytest

from console.cli import build_parser, main
from console.commands import signing
from console.demo.gateway_sim import SAMPLES
from tests.support.signing import PASSPHRASES
from tests.support.cli import every_parser

# Commands that run until they are stopped, or take over the terminal: parsed only.
LONG_RUNNING = {"watch", "serve", "console", "demo"}
# An example that names something a test home cannot hold, and the error it must end in instead.
CANNOT_HERE = {
    "ussd-console approve 42": "no held request #42",
    "ussd-console reject 42": "no held request #42",
    "ussd-console resolve 12": "no quarantine item #12",
    "ussd-console operator adopt": "nothing to adopt",  # a home from before signed operators
    # A restored home's alerts are paused; this one was never restored.
    "ussd-console alerts resume": "not paused",
    # An encrypted backup needs an age identity; a restore names a checkpoint kept off the
    # machine, and this test home has none on its "USB stick" (restore's anchors are tested in
    # test_backup_origin), so the restores stop at it and the next find no restored store.
    "ussd-console backup verify /media/usb/ussd-backup-20250508T140000Z.tar.gz.age": "no backup file at",
    "ussd-console --home /srv/ussd-new restore ussd-backup-20250508T140000Z.tar.gz --checkpoint":
        "cannot read the checkpoint file",
    "ussd-console --home /srv/ussd-new restore ussd-backup-20250508T140000Z.tar.gz.age": "no backup file at",
    "ussd-console --home /srv/ussd-new restore backup.tar.gz --checkpoint checkpoint.txt --db postgresql://":
        "the checkpoint carries no backup key",
}


def example_lines() -> list[str]:
    """Every example command line of every help, once each, in the order the helps give them."""
    seen: dict[str, None] = {}
    for _path, parser in every_parser():
        tail = parser.format_help().split("\nexamples:\n", 1)[1]
        for line in tail.splitlines():
            line = line.strip()
            if line.startswith("ussd-console ") and re.split(r" {2,}", line)[0] not in map(_command, seen):
                seen.setdefault(line)
    return list(seen)


def _command(line: str) -> str:
    return re.split(r" {2,}", line)[0]


def split(line: str) -> tuple[list[str], str | None, tuple[str, str] | None]:
    """The example's words without its note (after two spaces) and what follows a pipe or a
    redirection; the file a ``<`` reads; and ``(mode, file)`` a ``>`` or ``>>`` writes."""
    command = re.split(r" {2,}", line)[0]
    stdin = re.search(r" < (\S+)", command)
    stdout = re.search(r" (>>|>) (\S+)", command)
    command = re.split(r" (?:\||>>|>|<) ", command)[0]
    return (shlex.split(command)[1:], stdin and stdin.group(1),
            stdout and ("a" if stdout.group(1) == ">>" else "w", stdout.group(2)))


def answer(prompt: str) -> str:
    """The passphrase prompt of an operator, answered as that operator would."""
    name = re.search(r"passphrase for (\w+)", prompt).group(1)
    return PASSPHRASES[name]


@pytest.fixture
def workdir(tmp_path, monkeypatch, capsys):
    """A home with the demo's samples taken in (``kak01-1``, ``kak01-2``), the files the examples
    name, and the folders they write to; the home is also the working folder."""
    home = tmp_path / "home"
    assert main(["--home", str(home), "ingest", *sorted(str(p) for p in SAMPLES.iterdir())]) == 0
    for name in ("kakuma-0800.txt", "day.txt"):
        (home / name).write_bytes((SAMPLES / "01-session.txt").read_bytes())
    (home / "big-export.csv").write_bytes((SAMPLES / "07-legacy-export.csv").read_bytes())
    (tmp_path / "usb").mkdir()
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "bob.pass").write_text(PASSPHRASES["bob"] + "\n")
    (tmp_path / "keys" / "bob.pass").chmod(0o600)
    (tmp_path / "token.txt").write_text("t" * 40 + "\n")
    (tmp_path / ".smsgate-key").write_text("a signing key for the field phone\n")
    (tmp_path / ".smsgate-key").chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("USSD_CONSOLE_HOME", raising=False)
    monkeypatch.delenv("USSD_CONSOLE_DB", raising=False)
    monkeypatch.chdir(home)
    monkeypatch.setattr(signing, "ask", answer)
    # An alert target that takes the test alert and says nothing, for `alerts test`.
    (home / "config.toml").write_text('[alerts]\ncommand = "true"\n')
    # The backup the examples of `backup verify` and `restore` name, made here under that name.
    assert main(["--home", str(home), "backup"]) == 0
    [made] = (home / "backups").glob("ussd-backup-*")
    shutil.copy(made, home / "backups" / "ussd-backup-20250508T140000Z.tar.gz")
    shutil.copy(made, home / "ussd-backup-20250508T140000Z.tar.gz")
    capsys.readouterr()
    return tmp_path


def localize(argv: list[str], tmp) -> list[str]:
    """The example's paths made this test's: /srv/ussd is the prepared home, /media/usb a folder."""
    places = {"/srv/ussd-new": str(tmp / "new-home"), "/srv/ussd": str(tmp / "home"), "/media/usb": str(tmp / "usb"),
              "/run/keys": str(tmp / "keys"), "token.txt": str(tmp / "token.txt")}
    out = []
    for word in argv:
        for mark, path in places.items():
            if word == mark or word.startswith(mark + "/"):
                word = path + word[len(mark):]
                break
        out.append(os.path.expanduser(word) if word.startswith("~/") else word)
    if "--home" not in out:
        out = ["--home", str(tmp / "home"), *out]
    return out


def command_of(argv: list[str]) -> str:
    """The command an argument list names; none is the console."""
    words = iter(argv)
    for word in words:
        if word in ("--home", "--db"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return "console"


def run(argv: list[str], stdin: str | None, capsys) -> tuple[int, str, str]:
    if stdin is not None:
        sys.stdin = open(stdin, encoding="utf-8")  # restored by the caller
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: a usage error (2), or a help printed (0)
        code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return (code if code == 0 else -code), captured.out, captured.err
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_every_example_in_every_help_runs_without_a_usage_error(workdir, capsys):
    lines = example_lines()
    assert len(lines) > 60 and any(line.startswith("ussd-console operator add bob ") for line in lines)
    failed = []
    stdin = sys.stdin
    try:
        for line in lines:
            argv, feed, into = split(line)
            argv = localize(argv, workdir)
            if command_of(argv) in LONG_RUNNING:
                try:
                    build_parser(argv).parse_args(argv)
                except SystemExit as exc:
                    if exc.code:
                        failed.append(f"{line}: does not parse")
                continue
            code, out, err = run(argv, feed, capsys)
            sys.stdin = stdin
            if into is not None:
                mode, path = into
                with open(localize([path], workdir)[-1], mode, encoding="utf-8") as fh:
                    fh.write(out)
            if code < 0:
                failed.append(f"{line}: usage error: {err.strip()[-300:]}")
            elif code != 0:
                expected = next((why for start, why in CANNOT_HERE.items() if line.startswith(start)), None)
                if expected is None or expected not in err:
                    failed.append(f"{line}: exit {code}: {err.strip()[-300:]}")
    finally:
        sys.stdin = stdin
    assert not failed, "\n".join(failed)
