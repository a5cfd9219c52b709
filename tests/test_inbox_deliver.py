"""``deliver``: the one delivery function, exercised directly on real files."""

from __future__ import annotations

import datetime as dt
import logging
import os
import stat
import threading
import time

import pytest

from core.config import InboxConfig
from core.inbox import claimed_dir, deliver, file_counts, kind_skip, prepare_home, recent_files
from core.inbox.delivery import Delivery
from core.rules.scrub import scrub
from tests.support.helpers import frame
from tests.support.inbox_helpers import drop, frame_lines, text_of

CONFIG = InboxConfig(settle_time=0.3)


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_a_renamed_file_is_applied_once_and_archived_by_day(inbox):
    home, r = inbox
    path = drop(home, "s1.txt", text_of(frame_lines("a", 3)), age=5)
    result = deliver(path, "cli", r, home, CONFIG)
    assert (result.status, result.outcomes, result.claimed_now) == ("done", {"APPLIED": 3}, True)
    assert result.archived.parent == home.processed / dt.date.today().isoformat()
    assert result.archived.read_text() == text_of(frame_lines("a", 3))
    assert listing(home.inbox) == [".claimed"] and listing(claimed_dir(home)) == []
    assert file_counts(r) == {"cli": 1}
    assert [(f["name"], f["state"], f["line"], f["frames"]) for f in recent_files(r)] == [("s1.txt", "done", 3, 3)]
    assert deliver(path, "sweep", r, home, CONFIG).status == "lost"
    assert r.totals().applied == 3


def test_the_same_frames_under_a_new_name_are_duplicates(inbox):
    home, r = inbox
    deliver(drop(home, "first.txt", text_of(frame_lines("a", 4)), age=5), "cli", r, home, CONFIG)
    again = deliver(drop(home, "resend.txt", text_of(frame_lines("a", 4)), age=5), "cli", r, home, CONFIG)
    assert again.outcomes == {"DUPLICATE": 4}
    assert r.totals().cases == 4 and file_counts(r) == {"cli": 2}


def test_two_paths_racing_for_one_file_exactly_one_wins_and_the_loser_logs_it(inbox, caplog):
    home, r = inbox
    caplog.set_level(logging.INFO, logger="ussd.inbox")
    rounds = 25
    for n in range(rounds):
        path = drop(home, f"race{n}.txt", text_of(frame_lines(f"r{n}x", 2)), age=5)
        barrier = threading.Barrier(2)
        results = {}

        def run(source):
            barrier.wait()
            results[source] = deliver(path, source, r, home, CONFIG)

        threads = [threading.Thread(target=run, args=(s,)) for s in ("watch", "sweep")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = sorted(res.status for res in results.values())
        assert statuses == ["done", "lost"], statuses
    assert r.totals().applied == 2 * rounds and r.totals().duplicates == 0
    assert sum(file_counts(r).values()) == rounds
    lost = [rec for rec in caplog.records if "claim lost by" in rec.getMessage()]
    assert len(lost) == rounds and all(rec.levelno == logging.INFO for rec in lost)


def test_a_file_still_being_written_is_held_and_nothing_its_writer_adds_is_lost(inbox):
    home, r = inbox
    config = CONFIG.replace(settle_time=600)  # fresh however slowly this test runs, until backdated below
    lines = frame_lines("w", 6)
    staging = home.root / "staging"
    staging.mkdir()
    with open(staging / "live.txt", "w") as writer:
        writer.write(text_of(lines[:3]) + lines[3][:10])  # a half-written line at the end
        writer.flush()
        os.rename(staging / "live.txt", home.inbox / "live.txt")  # a careless writer: renamed before done
        first = deliver(home.inbox / "live.txt", "watch", r, home, config)
        assert (first.status, first.outcomes, first.line) == ("held", {"APPLIED": 3}, 3)
        writer.write(lines[3][10:] + "\n" + text_of(lines[4:]))  # lands in the claimed file
    old = time.time() - 601
    os.utime(first.claimed, (old, old))  # the writer went quiet ten minutes ago
    second = deliver(first.claimed, "sweep", r, home, config)
    assert (second.status, second.outcomes, second.source) == ("done", {"APPLIED": 3}, "watch")
    assert second.archived.read_text() == text_of(lines)
    assert r.totals().applied == 6 and r.rejects() == []


def test_a_stop_mid_file_resumes_from_the_committed_line_counting_nothing_twice(inbox):
    home, r = inbox
    config = CONFIG.replace(batch_lines=2)
    path = drop(home, "big.txt", text_of(frame_lines("b", 9)), age=5)
    stop = threading.Event()
    stop.set()
    first = deliver(path, "watch", r, home, config, stop=stop)
    assert (first.status, first.line, first.frames) == ("held", 2, 2)
    rest = deliver(first.claimed, "sweep", r, home, config)
    assert (rest.status, rest.frames, rest.source) == ("done", 7, "watch")
    assert r.per_source() == {"watch": {"APPLIED": 9}}
    assert file_counts(r) == {"watch": 1}


def test_a_crash_right_after_the_claim_resumes_under_the_claimers_path(inbox):
    home, r = inbox
    path = drop(home, "x.txt", text_of(frame_lines("c", 3)), age=5)
    claimed = claimed_dir(home) / "18a-1-0.watch~x.txt"  # as the claim names it; no progress committed
    os.rename(path, claimed)
    result = deliver(claimed, "sweep", r, home, CONFIG)
    assert (result.status, result.source, result.name, result.claimed_now) == ("done", "watch", "x.txt", False)
    assert file_counts(r) == {"watch": 1} and r.per_source() == {"watch": {"APPLIED": 3}}


@pytest.mark.parametrize("same_process", [True, False])
def test_two_workers_resuming_one_claimed_file_commit_each_batch_once(inbox, same_process):
    """In one process the second worker stands aside; across processes the progress row's
    compare-and-set rolls back whichever batch comes second."""
    home, r = inbox
    config = CONFIG.replace(batch_lines=1)
    path = drop(home, "shared.txt", text_of(frame_lines("s", 40)), age=5)
    stop = threading.Event()
    stop.set()
    claimed = deliver(path, "watch", r, home, config, stop=stop).claimed
    barrier = threading.Barrier(2)
    results = []

    def run():
        barrier.wait()
        if same_process:
            results.append(deliver(claimed, "sweep", r, home, config))
        else:  # no shared in-process registry, as between two processes
            results.append(Delivery(claimed, "sweep", r, home, config).run())

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert r.per_source() == {"watch": {"APPLIED": 40}}
    assert file_counts(r) == {"watch": 1}
    assert [res.status for res in results].count("done") == 1


@pytest.mark.parametrize("name, data, why", [
    ("bin.dat", b"kak01-1 \x00\x00\x01", "binary"),
    ("latin.txt", "kak01-1 café\n".encode("latin-1"), "not UTF-8"),
    ("huge.txt", b"x" * 5000, "size limit"),
    ("nocols.csv", b"id,phone\n1,+254712345678\n", "no frame or text column"),
])
def test_an_unreadable_file_goes_to_rejected_with_a_reason_file(inbox, name, data, why):
    home, r = inbox
    result = deliver(drop(home, name, data, age=5), "sweep", r, home, CONFIG.replace(max_file_bytes=4096))
    assert result.status == "rejected" and why in result.reason
    kept = (home.rejected / name).read_bytes()  # never deleted: kept without its phone numbers
    assert kept == scrub(name, data) and b"254712345678" not in kept
    assert why in (home.rejected / (name + ".reason")).read_text()
    assert file_counts(r) == {"sweep": 1} and r.totals().frames == 0
    assert recent_files(r)[0]["state"] == "rejected"


def test_unreadable_lines_are_rejects_with_file_and_line(inbox):
    home, r = inbox
    data = f'{{"frame_id": "j-1", "frame": "{frame(1, "S", "MED", 2, 3)}"}}\n{{broken\n\n[1]\n'
    deliver(drop(home, "feed.jsonl", data, age=5), "cli", r, home, CONFIG)
    assert sorted((x.file, x.line, x.outcome) for x in r.rejects()) == [
        ("feed.jsonl", 2, "REJECT_BAD_FORMAT"), ("feed.jsonl", 4, "REJECT_BAD_FORMAT")]
    assert r.totals().applied == 1


def test_symlinks_fifos_folders_and_temp_names_are_skipped_untouched(inbox, tmp_path):
    home, r = inbox
    outside = tmp_path / "outside.txt"
    outside.write_text(text_of(frame_lines("o", 2)))
    os.symlink(outside, home.inbox / "link.txt")
    os.mkfifo(home.inbox / "pipe")
    (home.inbox / "sub").mkdir()
    for name in (".hidden", "a.tmp", "b.part", "c.partial"):
        (home.inbox / name).write_text(text_of(frame_lines(name[0], 1)))
    reasons = {}
    for name in ("link.txt", "pipe", "sub", ".hidden", "a.tmp", "b.part", "c.partial"):
        result = deliver(home.inbox / name, "sweep", r, home, CONFIG)
        assert result.status == "skipped"
        reasons[name] = result.reason
    assert reasons["link.txt"] == "symlink" and reasons["pipe"] == "FIFO" and reasons["sub"] == "directory"
    assert {reasons[n] for n in ("a.tmp", "b.part", "c.partial")} == {"temporary name"}
    assert len(listing(home.inbox)) == 8 and r.totals().frames == 0 and file_counts(r) == {}


def test_device_files_and_sockets_are_never_read():
    assert kind_skip(os.stat_result((stat.S_IFCHR | 0o600,) + (0,) * 9)) == "device file"
    assert kind_skip(os.stat_result((stat.S_IFBLK | 0o600,) + (0,) * 9)) == "device file"
    assert kind_skip(os.stat_result((stat.S_IFSOCK | 0o600,) + (0,) * 9)) == "not a regular file"
    assert kind_skip(os.stat_result((stat.S_IFREG | 0o600,) + (0,) * 9)) is None


def test_nothing_outside_the_inbox_or_the_home_is_taken(inbox, tmp_path):
    home, r = inbox
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text(text_of(frame_lines("e", 1)))
    with pytest.raises(ValueError, match="not in the inbox"):
        deliver(elsewhere, "cli", r, home, CONFIG)
    from core.home import Home

    other = Home(tmp_path / "other").ensure()
    (tmp_path / "shared-inbox").mkdir()
    os.symlink(tmp_path / "shared-inbox", other.inbox)
    with pytest.raises(ValueError, match="outside the home"):
        prepare_home(other)
    (tmp_path / "elsewhere-archive").mkdir()
    os.symlink(tmp_path / "elsewhere-archive", home.processed / dt.date.today().isoformat())
    path = drop(home, "z.txt", text_of(frame_lines("z", 1)), age=5)
    with pytest.raises(ValueError, match="outside the home"):
        deliver(path, "cli", r, home, CONFIG)
    assert list((tmp_path / "elsewhere-archive").iterdir()) == []


def test_archive_keeps_originals_only_when_asked(inbox):
    home, r = inbox
    export = f"id,msisdn,message\r\n1,+254712345678,kak01-1 {frame(1, 'K', 'MED', 3, 86)}\r\n".encode()
    scrubbed = deliver(drop(home, "e.csv", export, age=5), "cli", r, home, CONFIG)
    assert b"254712345678" not in scrubbed.archived.read_bytes()
    kept = deliver(drop(home, "e.csv", export, age=5), "cli", r, home, CONFIG.replace(keep_originals=True))
    assert kept.archived.read_bytes() == export
    assert sorted(p.name for p in kept.archived.parent.iterdir()) == ["e-2.csv", "e.csv"]


def test_an_empty_file_is_counted_and_archived(inbox):
    home, r = inbox
    result = deliver(drop(home, "empty.txt", b"", age=5), "sweep", r, home, CONFIG)
    assert (result.status, result.frames) == ("done", 0)
    assert file_counts(r) == {"sweep": 1}
