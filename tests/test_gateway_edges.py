"""Nothing from a gateway is lost, hidden or leaked. One test per way it could be, each through the
inbox service ``ussd-console watch`` runs (in the test's process, on a clock the test moves on) or
the real delivery function, plus the search of the whole home, a real ``watch``'s log included,
for every phone number the test files carry."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time

import pytest

from core import Receiver
from core.config import InboxConfig
from core.inbox import claimed_dir, deliver, inbox_files, prepare_home
from tests.support.helpers import frame
from tests.support.clock import TestClock, tick
from tests.support.inbox_helpers import drop, started_services, wait_for
from tests.support.spreadsheets import ods_bytes, xlsx_bytes
from tests.support.cli import Ran, run_cli

F = [frame(1, f"Site{n}", "MED", n + 1, 50 + n) for n in range(120)]


@pytest.fixture
def service(home):
    """``start(clock=SYSTEM, **settings)``: the inbox service ``watch`` runs, on this home, in this process."""
    with started_services(home, settle_time=0.2, sweep_interval=0.5) as start:
        yield start


def cli(home, *args: str) -> Ran:
    return run_cli("--home", str(home.root), *args, env={"COLUMNS": "200"})


def rejects(home) -> list[tuple]:
    con = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True, timeout=60)
    try:
        return con.execute("SELECT file, line, reason, frame_id, frame_text FROM rejects ORDER BY file, line").fetchall()
    finally:
        con.close()


def cases(home) -> int:
    con = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True, timeout=60)
    try:
        return con.execute("SELECT COUNT(*) FROM cases").fetchone()[0]
    finally:
        con.close()


def lines_read(home) -> int | None:
    """How far the one inbox file's committed progress goes (None before its first commit)."""
    if not home.db.exists():
        return None
    con = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True, timeout=60)
    try:
        row = con.execute("SELECT line FROM inbox_files").fetchone()
    except sqlite3.OperationalError:
        return None
    finally:
        con.close()
    return row and row[0]


def ended(home, count: int):
    """Wait until ``count`` inbox files have ended (processed, rejected or vanished)."""
    def done():
        if not home.db.exists():
            return False
        con = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True, timeout=60)
        try:
            return con.execute("SELECT COUNT(*) FROM inbox_files WHERE state != 'claimed'").fetchone()[0] >= count
        except sqlite3.OperationalError:
            return False
        finally:
            con.close()
    wait_for(done, what=f"{count} files to end")


# -- 1: one bad byte is one rejected line, not a lost file ----------------------------------------


def test_1_one_bad_byte_is_one_rejected_line_and_the_other_frames_are_taken_in(home, service):
    service()
    rows = [f"g{n}-1,+2547110{n:05d},{F[n]}" for n in range(99)]
    rows.insert(40, "x40-1,+254711000040,caf\xe9 au lait")
    drop(home, "gateway.csv", ("frame_id,sender,text\n" + "\n".join(rows) + "\n").encode("latin-1"))
    lines = [f"n{n}-1 {F[n]}" for n in range(99)]
    lines.insert(10, "n99-1 H1|1|K\x00|MED|3|86|#00")
    drop(home, "nul.txt", "\n".join(lines) + "\n")
    ended(home, 2)
    assert cases(home) == 99 + 99
    assert [(f, line, why) for f, line, why, _i, _t in rejects(home)] == [
        ("gateway.csv", 42, "bad_encoding"), ("nul.txt", 11, "control_byte")]
    assert not list(home.rejected.glob("*"))  # no file went to rejected/ whole


# -- 2: a writer that pauses loses no frame -----------------------------------------------------------


def test_2_a_writer_that_keeps_the_file_open_and_pauses_loses_nothing(home, service, caplog):
    """Pauses of several settle times between lines and inside one; the file stays open throughout.
    The old receiver archived and unlinked the claimed file at the first pause, so every later line
    went into an unlinked inode, and the half line was taken as a bad_grammar reject. Each pause is
    a tick of the service's clock, and the service reads the file during it."""
    caplog.set_level(logging.DEBUG, logger="ussd.inbox")
    holds = lambda: sum("held until nothing more can arrive" in r.getMessage() for r in caplog.records)  # noqa: E731
    clock = TestClock()
    svc = service(clock=clock, settle_time=0.3)
    path = home.inbox / "live.txt"
    lines = [f"w{n}-1 {F[n]}\n" for n in range(4)]
    with open(path, "w") as fh:
        for n, pause in enumerate((1.0, 2.5, 1.5)):
            fh.write(lines[n])
            fh.flush()
            tick(svc, clock, pause)
            wait_for(lambda: lines_read(home) == n + 1, what=f"line {n + 1} read while the writer pauses")
        fh.write(lines[3][:12])  # mid-line, then a pause of ten settle times
        fh.flush()
        passes = holds()
        tick(svc, clock, 3.0)
        wait_for(lambda: holds() > passes, what="a pass over the file during the pause")
        assert lines_read(home) == 3 and rejects(home) == []  # the half line waits for the rest
        fh.write(lines[3][12:])
        fh.flush()
    tick(svc, clock, 3.0)
    ended(home, 1)
    assert cases(home) == 4 and rejects(home) == []
    [row] = inbox_files(Receiver(str(home.db)))
    assert (row.state, row.frames, row.lines) == ("processed", 4, 4)


def test_2_an_unterminated_last_line_waits_while_its_writer_holds_the_file(home):
    """Through the delivery function: the file is settled by its mtime, but a writer still holds it open,
    so its half line is not read and the file is not archived; once closed, all of it is taken."""
    config = InboxConfig(settle_time=0.2)
    path = home.inbox / "open.txt"
    prepare_home(home)
    with Receiver(str(home.db)) as r, open(path, "w") as writer:
        writer.write(f"a1-1 {F[1]}\na2-1 {F[2][:9]}")
        writer.flush()
        past = time.time() - 60
        os.utime(path, (past, past))
        first = deliver(path, "sweep", r, home, config)
        assert (first.status, first.frames, first.line) == ("held", 1, 1)
        writer.write(F[2][9:] + "\n")
        writer.flush()
        os.utime(first.claimed, (past, past))
        second = deliver(first.claimed, "sweep", r, home, config)
        assert (second.status, second.frames) == ("held", 1)  # still open: nothing more is archived
        writer.close()
        last = deliver(first.claimed, "sweep", r, home, config)
        assert last.status == "done" and r.totals().cases == 2 and r.rejects() == []


# -- 3: a file rejected whole is listed, counted and shown ---------------------------------------------


def test_3_rejected_files_are_listed_counted_and_explained(home, service):
    service(max_file_bytes=4096)
    drop(home, "noise.bin", os.urandom(2048).replace(b"\n", b"\x00"))
    drop(home, "export.csv", "ref,sender,when\n1,+254711000050,2024-05-01\n")
    drop(home, "huge.txt", f"h1-1 {F[1]}\n" * 200)
    drop(home, "fine.txt", f"f1-1 {F[1]}\n")
    ended(home, 4)
    listed = [json.loads(line) for line in cli(home, "files", "--json", "--state", "rejected").stdout.splitlines()]
    assert sorted(f["name"] for f in listed) == ["export.csv", "huge.txt", "noise.bin"]
    assert all({"name", "state", "reason", "frames"} <= set(f) and f["state"] == "rejected" for f in listed)
    why = {f["name"]: f["reason"] for f in listed}
    assert why["noise.bin"].startswith("binary data")
    assert why["huge.txt"].startswith("over the size limit")
    assert "found ref, sender, when" in why["export.csv"] and "looked for" in why["export.csv"]
    status = json.loads(cli(home, "status", "--json").stdout)
    assert status["files_rejected"] == 3
    table = cli(home, "files").stdout
    assert "rejected" in table and "processed" in table


# -- 4: no phone number is stored ----------------------------------------------------------------------

NUMBERS = ["254711000002", "254711000044", "0711000045", "254711000007", "254711000060", "254711000061",
           "254711000062", "254711000063", "254711000064", "254711000065", "254711000066"]


def spellings(number: str) -> set[bytes]:
    """A number as people write it: whole, without its country code or trunk zero, grouped."""
    national = number[3:] if number.startswith("254") else number.lstrip("0")
    forms = {number, "+" + number, national, "0" + national, f"{national[:3]} {national[3:6]} {national[6:]}",
             f"0{national[:3]} {national[3:6]} {national[6:]}", f"{national[:3]}-{national[3:6]}-{national[6:]}"}
    return {f.encode() for f in forms}


def phone_files() -> dict[str, bytes]:
    return {
        "unrecognised.csv": b"sender,sms_text_x\n+254711000060,hello\n",  # no text column: rejected whole
        "badbyte.csv": "frame_id,msisdn,text\nb1-1,+254711000061,caf\xe9\n".encode("latin-1"),
        "export.txt": f"+254711000002 {F[5]}\n+254711000002 {F[6]}\n".encode(),
        "bodies.csv": (f"frame_id,from,text\nm1-1,+254711000062,+254711000044 call me back\n"
                       f"m2-1,+254711000063,0711 000 045\nm3-1,+254711000063,{F[7]}\n").encode(),
        "floats.jsonl": (json.dumps({"frame_id": "j1-1", "frame": F[8], "wa": 254711000007.0}) + "\n"
                         + json.dumps({"frame_id": "j2-1", "frame": F[9], "sender": 254711000064}) + "\n").encode(),
        "oversize.csv": b"id,from,text\n" + b"".join(b"%d,+254711000065,x\n" % n for n in range(2000)),
        "sheet.xlsx": xlsx_bytes([["Message SID", "From", "Body"], ["SM1", 254711000066, f"x1-1 {F[10]}"],
                                  ["SM2", "+254711000066", "+254711000066 says hi"]]),
        "sheet.ods": ods_bytes([["id", "phone", "message"], [1, 254711000066, f"o1-1 {F[11]}"]]),
        "+254711000002.txt": f"p1-1 {F[12]}\n".encode(),
    }


def test_4_no_phone_number_is_at_rest_anywhere_in_the_home(home, tmp_path, watcher):
    w = watcher("--settle-time", "0.2", "--sweep-interval", "0.5", "--max-file-bytes", "16384")
    files = phone_files()
    for name, data in files.items():
        drop(home, name, data)
    ended(home, len(files))
    assert cli(home, "ranking", "--csv").returncode == 0  # an export too
    assert w.signal(15) == 0
    found = []
    for path in sorted(p for p in home.root.rglob("*") if p.is_file() and "staging" not in p.parts):
        data = path.read_bytes()
        found += [(str(path.relative_to(home.root)), s) for n in NUMBERS for s in spellings(n) if s in data]
        found += [(str(path), "name")] if any(s.decode() in str(path) for n in NUMBERS for s in spellings(n)) else []
    assert found == []
    # and nothing was lost on the way: the frames of those files are in the ledger
    con = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True)
    got = sorted(fid for (fid,) in con.execute("SELECT frame_id FROM cases"))
    con.close()
    assert got == ["j1-1", "j2-1", "m3-1", "o1-1", "p1-1", "x1-1"]


# -- 5: a normal-looking gateway CSV gives its frames, or the right reason --------------------------------


def test_5_no_frame_id_and_non_json_lines_say_what_is_wrong(home, service):
    service()
    drop(home, "ref.csv", f"ref,from,content\n1,+254711000070,{F[1]}\n2,+254711000071,k2-1 {F[2]}\n")
    drop(home, "feed.jsonl", json.dumps({"frame_id": "j1-1", "frame": F[3]}) + "\nnot json at all\n")
    ended(home, 2)
    got = rejects(home)
    assert [(f, line, why) for f, line, why, _i, _t in got] == [
        ("feed.jsonl", 2, "not_json"), ("ref.csv", 2, "no_frame_id")]
    assert got[1][3] == "" and got[1][4] == F[1]  # the frame is the text, not the id
    assert got[0][4] == "not json at all"
    assert cases(home) == 2  # k2-1 (its id in the message) and j1-1


# -- 6: one log line per fault, no row left claimed, no raw control byte ------------------------------


def test_6_conflict_quarantined_is_logged_once_however_often_the_commit_is_retried(home, caplog):
    """The file's progress row, the last write of its transaction, fails three times (a trigger
    stands in for a disk that refuses it), so the conflict's transaction rolls back three times."""
    prepare_home(home)
    caplog.set_level(logging.INFO, logger="ussd")
    config = InboxConfig(settle_time=0.0)
    with Receiver(str(home.db)) as r:
        r.ingest("c1-1", frame(1, "Kakuma1", "MED", 3, 86))
        path = drop(home, "conflict.txt", f"c1-1 {frame(1, 'Kakuma1', 'MED', 9, 86)}\n", age=5)
        r.db.execute_sql("CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.inbox_path_files "
                         "BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END")
        for _ in range(3):
            with pytest.raises(Exception, match="disk I/O error"):
                deliver(path if path.exists() else next(claimed_dir(home).glob("*conflict.txt")), "sweep", r,
                        home, config)
        r.db.execute_sql("DROP TRIGGER refuse")
        assert deliver(next(claimed_dir(home).glob("*conflict.txt")), "sweep", r, home, config).status == "done"
        assert r.totals().conflicts_open == 1
    assert len([rec for rec in caplog.records if "conflict quarantined" in rec.getMessage()]) == 1


def test_6_a_claimed_file_removed_mid_read_ends_its_row_as_vanished(home, caplog):
    prepare_home(home)
    caplog.set_level(logging.INFO, logger="ussd")
    config = InboxConfig(settle_time=600.0)  # fresh all along: read to its last line and held
    with Receiver(str(home.db)) as r:
        first = deliver(drop(home, "gone.txt", f"v1-1 {F[1]}\nv2-1 {F[2]}\n"), "watch", r, home, config)
        assert first.status == "held" and first.line == 2
        os.unlink(first.claimed)  # someone cleans up the claimed folder
        second = deliver(first.claimed, "watch", r, home, config)
        assert second.status == "vanished"
        [row] = inbox_files(r)
        assert row.state == "vanished" and "after line 2" in row.reason
    messages = [rec.getMessage() for rec in caplog.records]
    assert not any("finished by another worker" in m for m in messages)
    assert any("gone.txt vanished" in m for m in messages)


def test_6_a_home_ends_only_its_own_vanished_claims_on_a_shared_store(tmp_path):
    """Two homes on one store (as several gateways share one PostgreSQL): a claim held by one home
    is not in the other's folder, and the other must not end it as vanished."""
    from core.home import Home
    from core.inbox.rejecting import end_vanished_claims

    a, b = Home(tmp_path / "a").ensure(), Home(tmp_path / "b").ensure()
    for h in (a, b):
        prepare_home(h)
    store = str(tmp_path / "shared.db")
    config = InboxConfig(settle_time=600.0)  # fresh all along: read to its last line and held
    with Receiver(store) as r:
        held = deliver(drop(a, "a.txt", f"v1-1 {F[1]}\n"), "watch", r, a, config)
        assert held.status == "held"
        assert end_vanished_claims(r, b) == 0  # not b's claim
        assert [row.state for row in inbox_files(r)] == ["claimed"]
        assert end_vanished_claims(r, a) == 0  # a's, and still in a's folder
        os.unlink(held.claimed)
        assert end_vanished_claims(r, b) == 0
        assert end_vanished_claims(r, a) == 1  # a's, and gone from a's folder
        assert [row.state for row in inbox_files(r)] == ["vanished"]


def test_6_status_prints_the_home_path_escaped(tmp_path):
    from core.home import Home

    home = Home(tmp_path / "h\x1b[31m\x07ome").ensure()
    missing = cli(home, "status")  # a reading command creates no store, and its error is escaped too
    assert missing.returncode == 2 and "\x1b" not in missing.stderr and "h\\x1b[31m\\x07ome" in missing.stderr
    Receiver(str(home.db)).close()
    out = cli(home, "status")
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout and "h\\x1b[31m\\x07ome" in out.stdout


# -- spreadsheets -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, build", [("export.xlsx", xlsx_bytes), ("export.ods", ods_bytes)])
def test_spreadsheets_read_like_a_csv_and_archive_as_a_csv_without_phones(home, name, build):
    rows = [["Message ID", "Sender Number", "Message Content", "Received"],
            [101, 254711000080, f"s1-1 {F[1]}", "2024-05-01 10:00"],
            [102, "+254711000080", f"s2-1 {F[2]}", "2024-05-01 10:01"],
            [103, "+254711000080", "no frame here", "2024-05-01 10:02"]]
    prepare_home(home)
    with Receiver(str(home.db)) as r:
        result = deliver(drop(home, name, build(rows), age=5), "sweep", r, home, InboxConfig(settle_time=0.2))
        assert result.status == "done" and result.format == name.rsplit(".", 1)[1]
        assert result.outcomes == {"APPLIED": 2, "REJECT_BAD_FORMAT": 1}
        assert [(x.line, x.reason) for x in r.rejects()] == [(4, "bad_grammar")]
    assert result.archived.name == "export.csv"
    kept = result.archived.read_text()
    assert kept.splitlines()[0] == "Message ID,Message Content,Received" and "711000080" not in kept
