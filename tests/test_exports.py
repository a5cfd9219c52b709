"""``export VIEW``: every view as CSV and .xlsx, read back as a spreadsheet would, with no
phone number in any; formulas guarded; written atomically; existing files kept; bad
targets refused in one line."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
from python_calamine import CalamineWorkbook

from console.cli import main
from console.demo.gateway_sim import SAMPLES
from console.export_views import VIEWS
from core import Receiver
from core.signing import audit
from tests.support.helpers import frame
from tests.support.signing import passfile

PHONES = ("700000101", "700000102", "712345678")  # as the gateway export and a reason carry them


@pytest.fixture(scope="module")
def busy_template(tmp_path_factory):
    """A home with every view filled: a gateway export with phone numbers through the inbox,
    a reject line holding a phone number, an id a spreadsheet would run, a conflict, a signed mark.
    Built once for the module; each test gets its own copy (``busy_home``)."""
    from core.home import Home
    from core.inbox import prepare_home

    tmp_path = tmp_path_factory.mktemp("busy")
    home = Home(tmp_path / "home").ensure()
    prepare_home(home)
    cli = ["--home", str(home.root)]
    inbox_file = home.inbox / "gateway-0712345678.csv"
    shutil.copy(SAMPLES / "07-legacy-export.csv", inbox_file)
    assert main([*cli, "ingest", str(inbox_file)]) == 0
    extra = tmp_path / "more.txt"
    extra.write_text(f"-cmd-1 {frame(1, 'A', 'MED', 1, 1)}\n"
                     f"dad01-1 {frame(1, 'Dadaab1', 'FOO', 41, 77)}\n"
                     "x-1 call me on 0712345678\n"
                     "=HYPERLINK(1)-1 H1|1|A|MED|1|1|#00\n", encoding="utf-8")
    assert main([*cli, "ingest", str(extra)]) == 0
    pf = passfile(tmp_path, "alice")
    assert main([*cli, "operator", "add", "alice", "--passphrase-file", pf]) == 0
    assert main([*cli, "case", "mark", "dad02-2", "dispatched", "--operator", "alice", "--passphrase-file", pf,
                 "--reason", "team lead on +254 700 000 102"]) == 0
    return home.root


@pytest.fixture
def busy_home(busy_template, tmp_path, capsys):
    """A copy of ``busy_template`` of this test's own, with nothing printed yet."""
    from core.home import Home

    shutil.copytree(busy_template, tmp_path / "home", symlinks=True)
    capsys.readouterr()  # what building the template printed, when this test built it
    return Home(tmp_path / "home")


def read_back(path, fmt) -> list[list[str]]:
    if fmt == "csv":
        with path.open(encoding="utf-8", newline="") as fh:
            return list(csv.reader(fh))
    rows = CalamineWorkbook.from_path(str(path)).get_sheet_by_index(0).to_python()
    return [["" if c == "" else (str(int(c)) if isinstance(c, float) and c.is_integer() else str(c)) for c in r]
            for r in rows]


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_every_view_exports_and_reads_back_without_a_phone_number(busy_home, tmp_path, capsys, view, fmt):
    target = tmp_path / f"{view}.{fmt}"
    assert main(["--home", str(busy_home.root), "--json", "export", view, "--out", str(target)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == fmt and report["path"] == str(target)
    rows = read_back(target, fmt)
    assert rows[0] == VIEWS[view].header
    assert len(rows) - 1 == report["rows"] > 0
    text = "\n".join("|".join(r) for r in rows)
    for phone in PHONES:
        assert phone not in text, f"{view}.{fmt} carries {phone}"
    for row in rows[1:]:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left
    if view in ("cases", "ranking"):
        key = "frame_id"
        by_id = {r[rows[0].index(key)]: dict(zip(rows[0], r)) for r in rows[1:]}
        assert by_id["'-cmd-1"]["site"] == "A"  # kept as text, never run
        assert by_id["dad01-1"]["disputed"] == "true"  # the 41-person correction waits
        assert by_id["dad02-2"]["status"] == "dispatched"
    if view == "audit":
        with Receiver(str(busy_home.db)) as r:
            head = audit.head(r)
        assert ["checkpoint", "entries", str(head.count)] in [r[:3] for r in rows]
        _, cp = audit.make_checkpoint(r)
        tail = [x[:3] for x in rows]
        assert ["checkpoint", "head", head.hash] in tail
        assert tail[-1] == ["checkpoint", "line", cp.line()]  # last: what verify --checkpoint takes back
        assert "[phone]" in text  # the operator's reason keeps its words, not the number
    if view == "rejects":
        assert "'=HYPERLINK(1)-1" in text and "call me on [phone]" in text
    if view == "files":
        assert any("gateway-[phone].csv" in r[0] for r in rows[1:])


def test_default_names_and_the_home_exports_folder(busy_home, capsys):
    for fmt in ("csv", "xlsx"):
        assert main(["--home", str(busy_home.root), "--json", "export", "ranking", "--format", fmt]) == 0
        path = json.loads(capsys.readouterr().out)["path"]
        assert path.startswith(str(busy_home.exports / "dispatch-")) and path.endswith("." + fmt)


def test_an_existing_file_is_kept_unless_forced(busy_home, tmp_path, capsys):
    target = tmp_path / "cases.csv"
    target.write_text("keep me\n", encoding="utf-8")
    assert main(["--home", str(busy_home.root), "export", "cases", "--out", str(target)]) == 2
    assert "already exists; use --force" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == "keep me\n"
    assert main(["--home", str(busy_home.root), "export", "cases", "--out", str(target), "--force"]) == 0
    assert target.read_text(encoding="utf-8").startswith("frame_id,site,need")
    assert main(["--home", str(busy_home.root), "ranking", "--csv", str(target)]) == 2  # the same rule


@pytest.mark.parametrize("argv,words", [
    (["export", "audit", "--out", "{tmp}"], "is a folder"),
    (["export", "audit", "--out", "{tmp}/missing/a.csv"], "the folder {tmp}/missing does not exist"),
    (["ranking", "--csv", "{tmp}/missing/x.csv"], "the folder {tmp}/missing does not exist"),
    (["ranking", "--csv", "{tmp}"], "is a folder"),
    (["export", "audit", "--out", "-", "--format", "xlsx"], "only CSV can go to stdout"),
])
def test_a_bad_target_is_one_line_and_creates_nothing(busy_home, tmp_path, capsys, argv, words):
    before = sorted(p.name for p in tmp_path.iterdir())
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(["--home", str(busy_home.root), *argv]) == 2
    err = capsys.readouterr().err
    assert words.replace("{tmp}", str(tmp_path)) in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_csv_to_stdout(busy_home, capsys):
    assert main(["--home", str(busy_home.root), "export", "quarantine", "--out", "-"]) == 0
    rows = list(csv.reader(capsys.readouterr().out.splitlines()))
    assert rows[0] == VIEWS["quarantine"].header and rows[1][1] == "open"
