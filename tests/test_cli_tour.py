"""What a newcomer at an 80-column terminal met on the command line: tables that broke words
(``processe d``, ``! DISP UTED``) or dropped the need for a long id, no "did you mean", no
``help`` command, one try at a passphrase prompt, reasons shown as codes, helps without
examples. Each test runs the real ``ussd-console`` in a subprocess (a pseudo-terminal for the
passphrase prompt)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shlex
import shutil
import sys
import time

import pytest

from console.cli import build_parser
from console.demo.gateway_sim import SAMPLES
from console.render import FOLD_FLOOR
from core.rules.explain import REASON_WORDS
from tests.support.helpers import ROOT, frame
from tests.support.cli import every_parser
from tests.support.cli import run_cli
from tests.support.waiting import DEADLINE, wait_for

LONG_ID = "field-team-" + "x" * 40 + "-longname"  # 60 characters with its "-1": wider than any column


def ussd(*argv, cwd, columns=80, env=None):
    """The command run from ``cwd`` at ``columns``, in this process (tests/support/cli.py)."""
    return run_cli(*argv, cwd=cwd, env={"COLUMNS": str(columns), **(env or {})})


def ok(*argv, cwd, columns=80) -> str:
    proc = ussd(*argv, cwd=cwd, columns=columns)
    assert proc.returncode == 0, (argv, proc.stderr)
    return proc.stdout


def passfile(tmp_path, text="a long enough passphrase"):
    path = tmp_path / "pf"
    path.write_text(text + "\n")
    path.chmod(0o600)
    return str(path)


@pytest.fixture(scope="module")
def busy_home(tmp_path_factory):
    """The demo's samples, a file through the inbox, long ids in conflict (so a case is
    DISPUTED), two operators, a signed mark and a gateway: every listing has rows."""
    tmp = tmp_path_factory.mktemp("tour")
    ok("--home", "home", "ingest", *sorted(str(p) for p in SAMPLES.iterdir()), cwd=tmp)
    (tmp / "home" / "inbox").mkdir(exist_ok=True)
    shutil.copy(SAMPLES / "01-session.txt", tmp / "home" / "inbox" / "kakuma-processed-session.txt")
    ok("--home", "home", "ingest", "home/inbox/kakuma-processed-session.txt", cwd=tmp)
    (tmp / "long.txt").write_text("\n".join([
        f"{LONG_ID}-1 {frame(1, 'Kakuma1', 'PRO', 3, 86)}",
        f"{LONG_ID}-1 {frame(1, 'Kakuma1', 'PRO', 9, 86)}",
        f"{LONG_ID}-2 H1|2|Kakuma1",
    ]) + "\n")
    ok("--home", "home", "ingest", "long.txt", cwd=tmp)
    pf = passfile(tmp)
    ok("--home", "home", "operator", "add", "alice", "--passphrase-file", pf, cwd=tmp)
    ok("--home", "home", "operator", "add", "bob", "--role", "resolver", "--passphrase-file", pf,
       "--operator", "alice", "--operator-passphrase-file", pf, cwd=tmp)
    ok("--home", "home", "case", "mark", f"{LONG_ID}-1", "dispatched", "--operator", "alice", "--passphrase-file", pf,
       "--reason", "team sent with water and a medical kit for the clinic", cwd=tmp)
    ok("--home", "home", "gateway", "add", "office", "--kind", "africastalking", "--operator", "alice",
       "--passphrase-file", pf, "--reason", "short code", cwd=tmp)
    return tmp


LISTINGS = [["status"], ["cases"], ["ranking"], ["quarantine"], ["quarantine", "--all"], ["rejects"],
            ["evictions"], ["files"], ["operator", "list"], ["retention", "show"], ["audit", "show"],
            ["alerts"], ["gateway", "list"], ["case", "show", f"{LONG_ID}-1"]]


def column_fragments(text: str):
    """Each table column's lines, top to bottom, as (column cells, header or body)."""
    columns: dict = {}
    part = None
    for line in text.splitlines():
        if line[:1] in "┏┌┡├└┗":
            part = None if line[:1] in "└┗" else (len(columns), "head" if line[:1] in "┏┌" else "body")
            continue
        if part is None or line[:1] not in "│┃":
            continue
        for n, cell in enumerate(line.strip()[1:-1].split(line[0])):
            columns.setdefault((part, n), []).append(cell.strip())
    return columns.values()


def broken_words(narrow: str, wide: str) -> list[str]:
    """Words the narrow output split over two lines of one column: the end of one line and the
    start of the next make a word the wide output shows whole, and one of them is no word."""
    whole = set(wide.split())
    found = []
    for cells in column_fragments(narrow):
        for upper, lower in zip(cells, cells[1:]):
            if not upper or not lower:
                continue
            a, b = upper.split()[-1], lower.split()[0]
            joined = a + b
            if len(joined) <= FOLD_FLOOR and re.search("[A-Za-z]", joined) and joined in whole \
                    and (a not in whole or b not in whole):
                found.append(f"{a}|{b}")
    return found


def test_the_word_check_sees_a_word_broken_over_two_lines():
    narrow = "┏━━━━━━━━━━┓\n┃ state    ┃\n┡━━━━━━━━━━┩\n│ processe │\n│ d        │\n│ open !   │\n│ DISP     │\n│ UTED     │\n└──────────┘\n"
    assert broken_words(narrow, "state processed open ! DISPUTED") == ["processe|d", "DISP|UTED"]


def test_every_listing_at_80_columns_breaks_no_word_and_keeps_the_need(busy_home):
    for argv in LISTINGS:
        narrow = ok("--home", "home", *argv, cwd=busy_home)
        wide = ok("--home", "home", *argv, cwd=busy_home, columns=400)
        too_long = [line for line in narrow.splitlines() if len(line) > 80]
        assert not too_long, (argv, too_long)
        assert not broken_words(narrow, wide), (argv, broken_words(narrow, wide), narrow)
    cases = ok("--home", "home", "cases", cwd=busy_home)
    lines = cases.splitlines()
    header = next(line for line in lines if "frame_id" in line)
    for kept in ("need", "people", "status"):
        assert kept in header, header
    assert any("! DISPUTED" in line for line in lines), cases  # on one line, never "! DISP" "UTED"
    assert any("PRO" in line for line in lines) and any("protection" in line for line in lines)
    ids = "".join(c for cells in column_fragments(cases) for c in cells if c.startswith(("field", "x")) or "name" in c)
    assert LONG_ID + "-1" in ids  # the whole id, folded over lines, nothing cut
    assert "not shown at this width:" in cases and "version" in cases  # what was left out is said
    wide = ok("--home", "home", "cases", cwd=busy_home, columns=400)
    assert "not shown" not in wide and "version" in wide.splitlines()[2]


def test_a_terminal_too_narrow_for_the_columns_gets_one_block_per_row(busy_home):
    out = ok("--home", "home", "gateway", "list", cwd=busy_home, columns=40)
    assert all(len(line) <= 40 for line in out.splitlines()), out
    assert re.search(r"^name +office", out, re.M) and re.search(r"^kind +africastalking", out, re.M), out


def test_the_eviction_log_shows_each_cutoff_and_the_removed_range_on_two_lines(tmp_path):
    """The sample story: one scheduled run removed three ids first seen in one minute; a run now
    removes the story's frames, first seen over eighteen minutes (the story is from 2024)."""
    from core.home import Home
    from tools.sample_store import build

    build(Home(tmp_path / "home"))
    ok("--home", "home", "evict", cwd=tmp_path)
    [now, scheduled] = [json.loads(line) for line in ok("--home", "home", "--json", "evictions", cwd=tmp_path)
                        .splitlines()]
    minute = "%Y-%m-%d %H:%M"
    narrow, wide = (ok("--home", "home", "evictions", cwd=tmp_path, columns=c) for c in (80, 200))
    for out in (narrow, wide):
        assert "\\n" not in out, out  # a line break in the cell, not its escape
        assert time.strftime(minute, time.localtime(scheduled["cutoff"])) in out, out
        assert time.strftime(minute, time.localtime(now["cutoff"])) in out, out
        body = [line for line in out.splitlines() if line.startswith("│")]
        oldest, newest = (time.strftime(minute, time.localtime(now[k])) for k in ("oldest", "newest"))
        assert oldest in body[0] and newest in body[1] and oldest != newest, out
    assert not [line for line in narrow.splitlines() if len(line) > 80], narrow
    assert not broken_words(narrow, wide), narrow
    assert "cutoff" in narrow and "policy" in wide and "30 days" in wide


def test_every_reason_is_in_words_on_the_command_line(busy_home, tmp_path):
    """Codes stay in --json; people read words, also for the reasons readers give (no_text...)."""
    (tmp_path / "odd.csv").write_text("frame_id,message\nkak09-1\n")  # a row without its text cell
    proc = ussd("--home", "home", "ingest", str(tmp_path / "odd.csv"), cwd=busy_home, columns=200)
    assert proc.returncode == 0, proc.stderr
    assert "no text after the id" in proc.stdout and "no_text" not in proc.stdout
    out = "\n".join(ok("--home", "home", *argv, cwd=busy_home, columns=200) for argv in
                    (["quarantine", "--all"], ["rejects"], ["alerts"], ["case", "show", f"{LONG_ID}-1"]))
    for code in (c for c in REASON_WORDS if "_" in c):  # "new" is a word as well as a code
        assert code not in out, code
    assert "same frame id, different values" in out


def reason_codes_in_the_code() -> set[str]:
    """Every reason code the core can give a verdict, a reject or a conflict, read from its source."""
    import ast

    calls = {"Rejected": 0, "Unreadable": 1, "unreadable": 1, "_bad": 0, "Decision": 1}
    codes = set()
    for path in (ROOT / "core").rglob("*.py"):
        tree = ast.parse(path.read_text())
        constants = {t.id: node.value.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                     and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                     for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in calls:
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                if len(node.args) > calls[name]:
                    arg = node.args[calls[name]]
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        codes.add(arg.value)
                    elif isinstance(arg, ast.Name) and arg.id in constants:
                        codes.add(constants[arg.id])
    return codes - {""}  # the spool's placeholder: its reason is found again when the inbox reads it


def test_every_reason_the_core_gives_has_words_in_the_one_table():
    codes = reason_codes_in_the_code()
    assert {"no_text", "bad_trailer", "not_json", "new", "same_case_different_payload"} <= codes  # the walk works
    assert codes <= set(REASON_WORDS), sorted(codes - set(REASON_WORDS))


# -- "did you mean", help as a command, examples in every help ----------------------------------------
def test_a_mistyped_command_or_action_says_did_you_mean(tmp_path):
    for argv, meant in ((["stauts"], "status"), (["operator", "ad"], "add"), (["export", "cass"], "cases"),
                        (["quarantien"], "quarantine")):
        proc = ussd(*argv, cwd=tmp_path)
        assert proc.returncode == 2, proc
        assert f"did you mean '{meant}'?" in proc.stderr.splitlines()[-1], proc.stderr
    far = ussd("zzzz", cwd=tmp_path)
    assert far.returncode == 2 and "did you mean" not in far.stderr and "invalid choice: 'zzzz'" in far.stderr
    assert not (tmp_path / "data").exists()  # a typo creates no home


def test_help_is_a_command_the_same_as_dash_dash_help(tmp_path):
    assert ok("help", cwd=tmp_path) == ok("--help", cwd=tmp_path)
    assert ok("help", "operator", "add", cwd=tmp_path) == ok("operator", "add", "--help", cwd=tmp_path)
    assert ok("help", "cases", cwd=tmp_path) == ok("cases", "--help", cwd=tmp_path)
    assert "help" in ok("--help", cwd=tmp_path)  # listed with the other commands
    wrong = ussd("help", "stauts", cwd=tmp_path)
    assert wrong.returncode == 2 and "did you mean 'status'?" in wrong.stderr


def test_every_commands_help_ends_with_examples_that_are_real_command_lines():
    walked = list(every_parser())
    assert len(walked) > 40 and ("operator", "add") in dict(walked) and ("help",) in dict(walked)
    for path, parser in walked:
        text = parser.format_help()
        assert "\nexamples:\n" in text, " ".join(path)
        lines = text.split("\nexamples:\n", 1)[1].splitlines()
        assert 1 <= len(lines) <= 8 and all(line.startswith("  ") for line in lines), (path, lines)
        commands = [line.strip() for line in lines if line.strip().startswith("ussd-console ")]
        assert commands, path
        for line in commands:
            # Without the note after two spaces and the shell's pipe or redirection, each parses.
            argv = shlex.split(re.split(r" {2,}| [|<>] ", line)[0])[1:]
            try:
                build_parser(argv).parse_args(argv)  # the parser main() builds for it
            except SystemExit as exc:
                if exc.code != 0:
                    pytest.fail(f"{' '.join(path)}: example {line!r} does not parse ({exc})")


def test_operator_add_help_ends_with_examples_through_the_real_command(tmp_path):
    out = ok("operator", "add", "--help", cwd=tmp_path)
    tail = out.rsplit("examples:", 1)[1]
    assert "ussd-console operator add alice" in tail and "--operator alice" in tail


# -- three tries at a passphrase prompt ------------------------------------------------------------
class Terminal:
    """``ussd-console`` on a pseudo-terminal of its own (its controlling terminal, where getpass asks)."""

    def __init__(self, argv, cwd):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: never returns
            os.chdir(cwd)
            os.environ.update({"COLUMNS": "80", "PYTHONPATH": str(ROOT)})
            os.execv(sys.executable, [sys.executable, "-m", "console.cli", *argv])
        self.seen = b""
        self.status = None

    def _read(self) -> bool:
        ready, _, _ = select.select([self.fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(self.fd, 4096)
            except OSError:  # the child closed the terminal: it has ended
                chunk = b""
            if not chunk:
                return True
            self.seen += chunk
        return False

    def expect(self, text: str, count: int = 1) -> None:
        wait_for(lambda: self._read() or self.seen.count(text.encode()) >= count,
                 what=f"{text!r} x{count} on the terminal")
        assert self.seen.count(text.encode()) >= count, self.seen.decode(errors="replace")

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def wait(self) -> int:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            self._read()
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                while not self._read() and time.monotonic() < deadline:  # the rest it wrote, to the end
                    pass
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)
        raise AssertionError(f"ussd-console did not end: {self.seen.decode(errors='replace')}")


def unlock_log(home) -> list[str]:
    log = home / "logs" / "receiver.log"
    return [line for line in log.read_text().splitlines() if "failed unlock for operator alice" in line] \
        if log.exists() else []


@pytest.fixture
def signer_home(tmp_path):
    ok("--home", "home", "ingest", str(SAMPLES / "04-conflict.txt"), str(SAMPLES / "01-session.txt"), cwd=tmp_path)
    ok("--home", "home", "operator", "add", "alice", "--passphrase-file", passfile(tmp_path, "the right one here"),
       cwd=tmp_path)
    return tmp_path


def test_a_wrong_passphrase_at_the_prompt_is_asked_again_and_each_try_is_logged(signer_home):
    term = Terminal(["--home", "home", "retention", "set", "40", "--operator", "alice", "--reason", "long trips"],
                    signer_home)
    term.expect("About to sign:")
    for n in (1, 2):
        term.expect("passphrase for alice: ", n)
        term.type("not the one")
    term.expect("1 try left")
    term.expect("passphrase for alice: ", 3)
    term.type("the right one here")
    assert term.wait() == 0, term.seen.decode(errors="replace")
    shown = term.seen.decode(errors="replace")
    assert "retention is now 40 days" in shown and "2 tries left" in shown and "not the one" not in shown
    assert len(unlock_log(signer_home / "home")) == 2  # each wrong try is a failed unlock, logged
    failures = signer_home / "home" / "operators" / "unlock-failures.json"
    assert "alice" not in json.loads(failures.read_text() or "{}")  # the good one started the count again


def test_three_wrong_passphrases_end_the_command_with_nothing_signed(signer_home):
    term = Terminal(["--home", "home", "resolve", "1", "--keep-first", "--operator", "alice", "--reason", "site said"],
                    signer_home)
    for n in (1, 2, 3):
        term.expect("passphrase for alice: ", n)
        term.type(f"wrong guess {n}")
    assert term.wait() == 2
    shown = term.seen.decode(errors="replace")
    assert "3 tries, nothing was signed" in shown and "Traceback" not in shown
    assert len(unlock_log(signer_home / "home")) == 3
    state = json.loads((signer_home / "home" / "operators" / "unlock-failures.json").read_text())
    assert state["alice"]["failures"] == 3  # the growing wait after five counts every try
    quarantine = [json.loads(line) for line in ok("--home", "home", "quarantine", "--json", cwd=signer_home).splitlines()]
    assert [q["status"] for q in quarantine] == ["open"]


def test_a_passphrase_file_is_tried_once(signer_home):
    proc = ussd("--home", "home", "retention", "set", "40", "--operator", "alice", "--reason", "long trips",
                "--passphrase-file", passfile(signer_home, "not the right one"), cwd=signer_home)
    assert proc.returncode == 2 and "wrong passphrase" in proc.stderr and "tries" not in proc.stderr
    assert len(unlock_log(signer_home / "home")) == 1


# -- paging: a negative --limit or --offset is a usage error; a page past the end says so ---------------
def test_every_listing_refuses_a_negative_limit_or_offset_naming_the_flag(tmp_path):
    paged = [(path, flag) for path, parser in every_parser() for flag in ("--limit", "--offset")
             if flag in parser._option_string_actions]
    assert {(("cases",), "--offset"), (("files",), "--offset"), (("audit", "show"), "--limit")} <= set(paged)
    for path, flag in paged:
        proc = ussd("--home", "home", *path, flag, "-3", cwd=tmp_path)
        last = proc.stderr.strip().splitlines()[-1]
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (path, flag, proc.stderr)
        assert last == f"ussd-console {' '.join(path)}: error: argument {flag}: -3 is negative: " \
                       "a number of rows is 0 or more", last
    assert not (tmp_path / "home").exists()  # refused before anything is opened


def test_a_page_says_which_rows_it_shows_and_a_page_past_the_end_says_none(busy_home):
    total = len(ok("--home", "home", "--json", "cases", "--limit", "1000", cwd=busy_home).splitlines())

    def first(*argv):
        return ok("--home", "home", *argv, cwd=busy_home).splitlines()[0].strip()

    assert first("cases", "--offset", "1", "--limit", "2") == f"Cases 2-3 of {total}"
    assert first("cases", "--offset", "999") == f"Cases: none at offset 999 (of {total})"
    assert first("cases", "--limit", "0") == f"Cases: none (of {total})"
    assert first("cases", "--filter", "no-such-site") == "Cases: none"
    ranked = len(ok("--home", "home", "--json", "ranking", "--limit", "1000", cwd=busy_home).splitlines())
    assert first("ranking", "--limit", "2").endswith(f"1-2 of {ranked}")
    assert "none at offset 999" in ok("--home", "home", "ranking", "--offset", "999", cwd=busy_home)
    assert ok("--home", "home", "--json", "cases", "--offset", "999", cwd=busy_home) == ""
