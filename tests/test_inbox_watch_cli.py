"""``ussd-console watch`` as a real process (signals, kill -9, logs) and the inbox in ``ingest``/``status``."""

from __future__ import annotations

import json
import signal
import sqlite3

import pytest

from console.cli import main
from core import Receiver
from core.rules.formats import read_items
from tests.support.helpers import bad_trailer, frame
from tests.support.inbox_helpers import Holds, drop, every_file_under, frame_lines, text_of, wait_for
from tests.support.watch import Watcher

PHONES = ["+254712345678", "+254733000111", "0722 444 555"]
# Every way a phone number could have been written down by a careless copy.
PHONE_TRACES = [b"254712345678", b"712345678", b"254733000111", b"733000111", b"0722 444 555", b"0722444555",
                b"722444555"]


def progress(home) -> tuple[str, int] | None:
    """The big file's committed state, read the way any other reader of the store would."""
    if not home.db.exists():
        return None
    con = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True, timeout=60)
    try:
        row = con.execute("SELECT state, line FROM inbox_files").fetchone()
    except sqlite3.OperationalError:
        return None
    finally:
        con.close()
    return row


def mixed_file(count: int) -> str:
    """New frames, re-sends inside the file, a conflict, bad trailers and garbage lines."""
    lines = frame_lines("big", count)
    out = []
    for n, line in enumerate(lines):
        out.append(line)
        if n % 10 == 9:
            out.append(lines[n - 5])  # re-send
        if n % 250 == 0:
            fid, text = line.split(" ")
            out.append(f"{fid} {bad_trailer(text)}")
        if n % 333 == 0:
            out.append("garbage-without-frame")
    fid = lines[1].split(" ")[0]
    out.append(f"{fid} {frame(int(fid.rsplit('-', 1)[1]), 'Other', 'FOO', 99, 1)}")  # conflict
    return text_of(out)


def interrupt_mid_file(holds: Holds, watcher: Watcher, commits: int, sig) -> tuple[int, int]:
    """Let the watcher commit ``commits`` batches, signal it while it waits after the last one.

    (exit code, line committed when signalled)
    """
    pid = watcher.proc.pid
    for n in range(commits):
        if n:
            holds.release(pid)
        marker = holds.next(pid, alive=lambda: watcher.proc.poll() is None)
        assert marker is not None, watcher.stderr()
    _claim, line = holds.where(marker)
    return watcher.signal(sig), line


def test_killing_the_watcher_mid_file_and_starting_it_again_applies_nothing_twice(home, tmp_path):
    home.config.write_text("[inbox]\nbatch_lines = 50\nsettle_time = 0.2\nsweep_interval = 0.5\n")
    data = mixed_file(8000)
    total_lines = data.count("\n")
    reference = Receiver(":memory:")
    items, _fmt = read_items("big.txt", data.encode())
    reference.ingest_many([(f, t, "big.txt", n) for f, t, n in items], source="watch")
    holds = Holds(tmp_path / "holds")  # each watcher waits after every commit until let go

    watcher = Watcher(home, tmp_path, env=holds.env)
    drop(home, "big.txt", data)
    code, line = interrupt_mid_file(holds, watcher, 3, signal.SIGINT)
    assert code == 0  # a clean stop ...
    assert progress(home) == ("claimed", line) and 0 < line < total_lines
    watcher = Watcher(home, tmp_path, env=holds.env)
    code, resumed = interrupt_mid_file(holds, watcher, 2, signal.SIGKILL)
    assert code == -signal.SIGKILL  # ... then a crash
    assert progress(home) == ("claimed", resumed) and line < resumed < total_lines
    assert len(list((home.inbox / ".claimed").iterdir())) == 1

    watcher = Watcher(home, tmp_path)
    wait_for(lambda: progress(home) == ("done", total_lines), timeout=60, what="the file finished")
    assert watcher.signal(signal.SIGTERM) == 0
    with Receiver(str(home.db)) as r:
        assert r.totals() == reference.totals()
        assert r.per_source() == reference.per_source()
        assert len(r.rejects(limit=1000)) == len(reference.rejects(limit=1000))
        assert r.quarantine() and len(r.quarantine()) == len(reference.quarantine())
    assert [p.name for p in home.processed.rglob("*") if p.is_file()] == ["big.txt"]
    reference.close()


def test_a_gateway_export_with_bom_crlf_and_phone_numbers_leaves_no_number_under_the_home(home, tmp_path):
    csv_rows = [
        "\ufeffid,Sender,Received,Message",
        f"1,{PHONES[0]},2024-05-01 10:00,kak01-1 {frame(1, 'Kakuma1', 'MED', 3, 86)}",
        f"2,{PHONES[1]},2024-05-01 10:01,kak02-2 {frame(2, 'Kakuma2', 'SHE', 8, 71)}",
        f"3,{PHONES[2]},2024-05-01 10:02,",  # no message: a reject, and still no number stored
        f'4,{PHONES[0]},2024-05-01 10:03,"kak03-3 {bad_trailer(frame(3, "Kakuma1", "WAT", 12, 69))}"',
    ]
    jsonl = "\n".join([
        json.dumps({"frame_id": "kak04-1", "frame": frame(1, "Dadaab", "FOO", 5, 60), "msisdn": PHONES[1]}),
        json.dumps({"urn": f"tel:{PHONES[2]}", "text": f"kak05-1 {frame(1, 'Dadaab', 'PRO', 2, 40)}"}),
    ]) + "\n"
    watcher = Watcher(home, tmp_path)
    drop(home, "export.csv", "\r\n".join(csv_rows) + "\r\n")
    drop(home, "feed.jsonl", jsonl)
    wait_for(lambda: len([p for p in home.processed.rglob("*") if p.is_file()]) == 2, what="both files archived")
    assert watcher.signal(signal.SIGTERM) == 0
    with Receiver(str(home.db)) as r:
        assert r.totals().applied == 4 and r.totals().rejects == 2
        assert {x.file for x in r.rejects()} == {"export.csv"}
    log = (home.logs / "receiver.log").read_text()
    assert "claim won by watch: export.csv" in log and "SIGTERM received" in log
    assert "scheduled eviction run" in log and "file export.csv done by watch" in log
    checked = 0
    for path in every_file_under(home.root):
        content = path.read_bytes()
        for trace in PHONE_TRACES:
            assert trace not in content, f"{trace!r} found in {path}"
        checked += 1
    assert checked >= 4  # the store, the log and both archive copies at least
    assert "Traceback" not in watcher.stderr()


def test_ingest_reads_csv_and_json_lines_and_takes_inbox_files_through_the_inbox(home, tmp_path, capsys):
    outside = tmp_path / "export.csv"
    outside.write_bytes(f"\ufeffid,phone,text\r\n1,{PHONES[0]},kak01-1 {frame(1, 'K', 'MED', 3, 86)}\r\n".encode())
    assert main(["ingest", "--home", str(home.root), str(outside)]) == 0
    assert outside.exists()  # a file outside the inbox is only read
    inside = home.inbox / "feed.jsonl"
    home.inbox.mkdir()
    inside.write_text(json.dumps({"frame_id": "kak02-2", "frame": frame(2, "K", "SHE", 8, 71)}) + "\n")
    assert main(["ingest", "--home", str(home.root), str(inside)]) == 0
    assert not inside.exists() and len(list(home.processed.rglob("feed.jsonl"))) == 1
    capsys.readouterr()
    assert main(["status", "--home", str(home.root), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["files_per_path"] == {"cli": 1}
    assert status["per_source"] == {"cli": {"APPLIED": 2}}
    assert main(["status", "--home", str(home.root)]) == 0
    assert "Inbox files" in capsys.readouterr().out


def test_ingest_of_an_unreadable_file_is_one_line(home, tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\x00\x01binary")
    assert main(["ingest", "--home", str(home.root), str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "binary" in err[0]


@pytest.mark.parametrize("name", [".hidden.txt", "half.part"])
def test_ingest_refuses_names_the_inbox_never_reads(home, capsys, name):
    home.inbox.mkdir()
    (home.inbox / name).write_text(text_of(frame_lines("n", 1)))
    assert main(["ingest", "--home", str(home.root), str(home.inbox / name)]) == 2
    assert "never read" in capsys.readouterr().err
