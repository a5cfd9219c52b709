"""Hostile input: whatever a gateway writes, every file gets an outcome (processed,
rejected with a reason, or a logged skip) and nothing from it reaches a log line, the command
line's output or the store unescaped: no ESC, BEL, NUL or other control character."""

from __future__ import annotations

import json
import logging
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from console.cli import main
from core.config import InboxConfig
from core.inbox import InboxService, claimed_dir, deliver
from tests.support.helpers import ROOT, frame
from tests.support.inbox_helpers import drop, wait_for

# Any C0 control but newline and tab, DEL, and the C1 controls (0x9b is a one-byte CSI).
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
ESCAPES = ["\x1b[2J", "\x1b]0;pwned\x07", "\x07", "\x1b[31;1m", "\x9b2J", "\x1bP+q\x1b\\"]
MARKUP = ["[bold]", "[link=https://evil.example]click[/link]", "[/]"]
HOSTILE_NAME = "[bold]x[link=evil.example]\x1b]0;pwned\x07\x1b[2J.txt"  # no "/": a file name
CONFIG = InboxConfig(settle_time=0.2)
GOOD = frame(1, "Kakuma1", "MED", 3, 86)


def assert_clean(text: str, where: str) -> None:
    found = CONTROL.search(text)
    assert found is None, f"raw control {found.group()!r} in {where}: ...{text[max(0, found.start() - 60):found.end() + 20]!r}"


def store_text(db_path) -> str:
    """Every text value of every table, one per line."""
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    out = []
    try:
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in con.execute(f'SELECT * FROM "{table}"'):
                out.extend(f"{table}: {v}" for v in row if isinstance(v, str))
    finally:
        con.close()
    return "\n".join(out)


def take(home, r, name: str, data: bytes):
    return deliver(drop(home, name, data, age=5), "sweep", r, home, CONFIG)


def bytes_read() -> int:
    """Bytes this process has read through read-like calls (Linux): a count, not a clock."""
    try:
        io = open("/proc/self/io").read()
    except FileNotFoundError:
        pytest.skip("no /proc/self/io on this system")
    return int(re.search(r"^rchar: (\d+)$", io, re.M).group(1))


def reason_of(home, name: str) -> str:
    return (home.rejected / f"{name}.reason").read_text()


# -- one outcome per hostile file ------------------------------------------------------------------


def test_random_bytes_are_rejected_unread_with_a_reason(inbox):
    home, r = inbox
    data = random.Random(6).randbytes(64 * 1024)
    result = take(home, r, "noise.txt", data)
    assert result.status == "rejected" and "binary data" in result.reason
    assert (home.rejected / "noise.txt").read_bytes() == data  # kept as it came, for a person to look at
    assert "binary data (NUL bytes)" in reason_of(home, "noise.txt")
    assert r.totals().frames == 0


def test_a_file_with_no_readable_line_is_rejected_with_the_offset(inbox):
    home, r = inbox
    data = b"b1-1 caf\xe9 \xff\xfe\n" + b"\xff\n"
    result = take(home, r, "latin1.txt", data)
    assert (result.status, result.reason) == ("rejected", "not UTF-8 text (no line can be read; bad byte at offset 8)")


# The line is the unit of rejection: one bad byte is one reject with its file and line, and the
# file's good frames are still taken in (it does not go to rejected/ whole as "not UTF-8 text").
@pytest.mark.parametrize("name, bad, reason", [
    ("nul.txt", b"b1-1 H1|1|K\x00|MED|3|86|#00", "control_byte"),
    ("esc.txt", b"b1-1 H1|1|K\x1b[2J|MED|3|86|#00", "control_byte"),
    ("latin1.txt", "b1-1 café".encode("latin-1"), "bad_encoding"),
    ("gateway.csv", "frame_id,sender,text\nb1-1,+254711000099,caf\xe9".encode("latin-1"), "bad_encoding"),
])
def test_one_bad_line_is_one_reject_and_every_other_line_is_taken_in(inbox, name, bad, reason):
    home, r = inbox
    head = b"frame_id,sender,text\n" if name.endswith(".csv") else b""
    bad = bad.split(b"\n", 1)[-1] if head else bad
    sep = ",+2547110001{:02d}," if head else " "
    good = [f"g{i}-1{sep.format(i)}{frame(1, f'S{i}', 'MED', 3, 86)}".encode() for i in range(99)]
    lines = good[:50] + [bad] + good[50:]
    result = take(home, r, name, head + b"\n".join(lines) + b"\n")
    bad_line = 51 + (1 if head else 0)
    assert result.status == "done" and result.outcomes == {"APPLIED": 99, "REJECT_BAD_FORMAT": 1}
    assert [(x.file, x.line, x.reason) for x in r.rejects()] == [(name, bad_line, reason)]
    assert r.totals().cases == 99
    assert_clean(store_text(home.db), "the store")


@pytest.mark.parametrize("name,data", [
    ("long.txt", b"a1-1 H1|" + b"A" * 10_000_000 + b"\n" + f"b1-1 {GOOD}\n".encode()),
    ("long.jsonl", json.dumps({"frame_id": "a1-1", "frame": "H1|" + "A" * 10_000_000}).encode() + b"\n"
     + json.dumps({"frame_id": "b1-1", "frame": GOOD}).encode() + b"\n"),
    ("long.csv", b"frame_id,frame\na1-1,H1|" + b"A" * 10_000_000 + f"\nb1-1,{GOOD}\n".encode()),
], ids=["plain", "jsonl", "csv"])
def test_a_10_mb_line_is_one_bounded_reject_and_the_next_line_still_counts(inbox, name, data):
    home, r = inbox
    result = take(home, r, name, data)
    assert result.status == "done" and result.outcomes == {"REJECT_BAD_FORMAT": 1, "APPLIED": 1}
    [reject] = r.rejects()
    assert reject.line == (2 if name.endswith(".csv") else 1) and len(reject.frame_text) <= 210


def test_a_1_gb_sparse_file_over_the_size_limit_is_rejected_unread(inbox):
    home, r = inbox
    staging = home.root / "huge.txt"
    with open(staging, "wb") as fh:
        fh.truncate(1 << 30)  # 1 GiB, sparse: nothing is written and nothing may be read
    os.utime(staging, (time.time() - 5, time.time() - 5))
    os.rename(staging, home.inbox / "huge.txt")
    before = bytes_read()
    result = deliver(home.inbox / "huge.txt", "sweep", r, home, CONFIG)
    read = bytes_read() - before
    assert result.status == "rejected" and result.reason == f"over the size limit ({1 << 30} > {64 << 20} bytes)"
    assert (home.rejected / "huge.txt").stat().st_size == 1 << 30
    assert read < 1 << 20, f"{read} bytes read: the file was read, not refused by its size"


def test_a_csv_with_10000_columns_is_read_and_archived_without_its_phone_column(inbox):
    home, r = inbox
    header = [f"c{i}" for i in range(10_000)]
    header[4321], header[9000] = "message", "msisdn"
    rows = []
    for n in range(3):
        row = [str(n)] * 10_000
        row[4321] = f"k{n}-1 {frame(1, 'Kakuma1', 'MED', n + 1, 50)}"
        row[9000] = "+254712345678"
        rows.append(",".join(row))
    data = (",".join(header) + "\n" + "\n".join(rows) + "\n").encode()
    result = take(home, r, "wide.csv", data)
    assert result.status == "done" and result.outcomes == {"APPLIED": 3}
    assert b"254712345678" not in result.archived.read_bytes()


def test_a_csv_with_an_unbalanced_quote_gives_the_broken_record_a_reject(inbox):
    home, r = inbox
    data = f'id,message\n1,"a1-1 {GOOD}\n2,b1-1 {GOOD}\n3,c1-1 {GOOD}\n'.encode()
    result = take(home, r, "quote.csv", data)
    assert result.status == "done" and result.outcomes == {"REJECT_BAD_FORMAT": 1}
    assert [(x.line, x.reason) for x in r.rejects()] == [(2, "bad_csv_record")]


def test_symlinks_out_of_the_home_and_fifos_are_skipped_logged_and_left(home, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="ussd")
    outside = tmp_path / "passwd"
    outside.write_text(f"a1-1 {GOOD}\n")
    service = InboxService(home, config=InboxConfig(observer=False, sweep=False)).start()
    try:
        os.symlink(outside, home.inbox / "escape.txt")
        os.symlink("../../../../etc", home.inbox / "dir-link")
        os.mkfifo(home.inbox / f"pipe{HOSTILE_NAME}")
        service.sweep_now()
        service.sweep_now()
        skips = sorted(rec.getMessage() for rec in caplog.records if "skipping" in rec.getMessage())
        assert skips == [
            "inbox: skipping dir-link: symlink (never read)",
            "inbox: skipping escape.txt: symlink (never read)",
            "inbox: skipping pipe[bold]x[link=evil.example]\\x1b]0;pwned\\x07\\x1b[2J.txt: FIFO (never read)",
        ]
        assert service.receiver.totals().frames == 0 and outside.read_text() == f"a1-1 {GOOD}\n"
        assert len(list(home.inbox.iterdir())) == 4  # the three, and .claimed
    finally:
        service.stop()
    # By hand: a FIFO or a device is refused in one line instead of blocking or reading forever.
    os.mkfifo(tmp_path / "fifo")
    for path in (tmp_path / "fifo", "/dev/zero"):
        assert main(["ingest", "--home", str(home.root), str(path)]) == 2


def test_names_with_newlines_dots_and_escapes_are_taken_and_shown_escaped(inbox, capsys):
    home, r = inbox
    for n, name in enumerate(("line\nbreak.txt", "a..b.txt", "...txt", HOSTILE_NAME)):
        result = take(home, r, name, f"z{n}-1 {GOOD}\n".encode())
        assert result.status in ("done", "skipped"), (name, result)
        assert_clean(result.name, "FileResult.name")
    assert (home.inbox / "...txt").exists()  # a dotfile: never read
    assert sorted(p.name for p in home.processed.rglob("*") if p.is_file()) == sorted(
        ["line\nbreak.txt", "a..b.txt", HOSTILE_NAME])
    # A path with ../ in it is resolved before the inbox check: this one is outside, only read.
    outside = home.root / "out.txt"
    outside.write_text(f"o1-1 {GOOD}\n")
    assert main(["ingest", "--home", str(home.root), str(home.inbox / ".." / "out.txt")]) == 0
    assert outside.exists()
    # A hostile name that does not exist: one escaped line.
    assert main(["ingest", "--home", str(home.root), str(home.root / HOSTILE_NAME)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\\x1b[2J" in err
    assert_clean(err, "stderr")
    assert_clean(store_text(home.db), "the store")


def hostile_lines() -> list[str]:
    lines = [f"m{n}-1 {frame(1, 'Kakuma1', 'MED', n + 1, 50)[:-2]}{text}" for n, text in enumerate(MARKUP)]
    lines += [f"e{n}-1 H1|1|K{seq}|MED|3|86|#00" for n, seq in enumerate(ESCAPES)]
    lines += [f"{seq}-1 {GOOD}" for seq in ESCAPES]  # in the frame id
    lines += [f"[bold]id {GOOD}", f"x1-1 {GOOD}\x1b[2J", f"y1-1 {GOOD}{MARKUP[1]}"]
    return lines


def test_markup_and_control_sequences_in_frames_are_rejects_stored_and_shown_escaped(inbox, capsys):
    home, r = inbox
    text = "".join(line + "\n" for line in hostile_lines())
    jsonl = "".join(json.dumps({"frame_id": seq + "-1", "frame": GOOD + seq}) + "\n" for seq in ESCAPES)
    assert take(home, r, "plain.txt", text.encode()).status == "done"
    assert take(home, r, "feed.jsonl", jsonl.encode()).status == "done"
    outside = home.root / HOSTILE_NAME
    outside.write_text(text)
    assert main(["ingest", "--home", str(home.root), str(outside)]) == 0
    totals = r.totals()
    assert totals.applied == 0 and totals.rejects == totals.frames == 2 * len(hostile_lines()) + len(ESCAPES)
    outputs = [capsys.readouterr()]
    for command in (["status"], ["rejects", "--limit", "500"], ["quarantine", "--all"], ["cases"], ["ranking"],
                    ["status", "--json"], ["rejects", "--json", "--limit", "500"]):
        assert main([*command, "--home", str(home.root)]) == 0
        outputs.append(capsys.readouterr())
    shown = "".join(o.out + o.err for o in outputs)
    assert_clean(shown, "the command line's output")
    assert "[bold]" in shown  # shown as text, not taken as markup
    assert_clean(store_text(home.db), "the store")


# -- all of it through a real watcher: its log file and its stderr ----------------------------------------


def test_a_watcher_fed_every_hostile_file_logs_nothing_raw_and_leaves_only_the_skips(home, tmp_path):
    home.config.write_text("[inbox]\nsweep_interval = 0.1\nsettle_time = 0.1\nmax_file_bytes = 1048576\n")
    files = {
        "noise.bin": random.Random(1).randbytes(4096),
        "latin1.txt": b"a1-1 caf\xe9\n",
        HOSTILE_NAME: "".join(line + "\n" for line in hostile_lines()).encode(),
        "line\nbreak\x1b[2J.csv": f'id,message\n1,"a1-1 {GOOD}\n'.encode(),
        "huge.txt": None,
        "feed\x07.jsonl": "".join(json.dumps({"frame_id": s, "frame": s}) + "\n" for s in ESCAPES).encode(),
    }
    (home.inbox).mkdir(parents=True, exist_ok=True)
    os.symlink("/etc/passwd", home.inbox / "link\x1b[2J.txt")
    os.mkfifo(home.inbox / "fifo\x07")
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "console.cli", "watch", "--home", str(home.root)], cwd=ROOT,
                                stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        try:
            log = home.logs / "receiver.log"
            wait_for(lambda: log.exists() and "watching " in log.read_text(), timeout=60, what="watch to start")
            for name, data in files.items():
                if data is None:
                    with open(home.root / name, "wb") as fh:
                        fh.truncate(2 << 20)
                    os.rename(home.root / name, home.inbox / name)
                else:
                    drop(home, name, data)

            def settled():
                left = sorted(p.name for p in home.inbox.iterdir() if p.name != ".claimed")
                return left == ["fifo\x07", "link\x1b[2J.txt"] and not list(claimed_dir(home).iterdir())

            wait_for(settled, timeout=60, what="every file processed or rejected")
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
    rejected = sorted(p.name for p in home.rejected.iterdir() if not p.name.endswith(".reason"))
    processed = sorted(p.name for p in home.processed.rglob("*") if p.is_file())
    assert rejected == sorted(["noise.bin", "latin1.txt", "huge.txt"])
    assert processed == sorted([HOSTILE_NAME, "line\nbreak\x1b[2J.csv", "feed\x07.jsonl"])
    log_text = (home.logs / "receiver.log").read_text()
    assert_clean(log_text, "the log file")
    assert_clean(err_path.read_text(), "the watcher's stderr")
    assert "Traceback" not in err_path.read_text()
    assert "skipping link\\x1b[2J.txt: symlink" in log_text and "skipping fifo\\x07: FIFO" in log_text
    assert_clean(store_text(home.db), "the store")
    for reason in home.rejected.glob("*.reason"):
        assert_clean(reason.read_text(), reason.name)
