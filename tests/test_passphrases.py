"""A new key's passphrase is judged by zxcvbn, told the operator's name, the home's site names and
the program's name: the weak ones an attacker of this home tries first are refused in one line
with the estimator's own words. Through the command line, as an admin meets it (in the test's
process; a fresh interpreter where what it loads is the question)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from unittest import mock

import pytest

from core import Receiver
from core.signing.keys import key_path
from core.signing.operators import list_operators

from tests.support.cli import Ran, run_cli
from tests.support.helpers import ROOT, frame
from tests.support.signing import passfile

ADD = ("operator", "add", "alice", "--passphrase-file")


def ussd(home, *argv: str) -> Ran:
    """``ussd-console --home HOME ARGV...`` from inside the home, with no home or store named in
    the environment."""
    with mock.patch.dict(os.environ):
        for name in ("USSD_CONSOLE_HOME", "USSD_CONSOLE_DB"):
            os.environ.pop(name, None)
        return run_cli("--home", str(home.root), *argv, cwd=home.root)


def with_sites(home, tmp_path, *sites: str) -> None:
    feed = tmp_path / "sites.txt"
    feed.write_text("".join(f"s{i}-1 {frame(1, site, 'WAT', 5, 50)}\n" for i, site in enumerate(sites)))
    assert ussd(home, "ingest", str(feed)).returncode == 0


def refusal(proc) -> str:
    """The one line an admin reads; nothing was created."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def nobody_added(home) -> None:
    assert not key_path(home, "alice").exists()
    with Receiver(str(home.db)) as r:
        assert list_operators(r) == []


# What each of the passphrases found accepted is refused with: the estimator's words (its warning
# or its suggestion), or, where it scores the program's own name as strong, that rule.
WEAK = {
    "passwordpassword": ("strength 0 of 4", 'Repeats like "abcabcabc" are only slightly harder to guess'),
    "qwertyuiopasdf": ("strength 1 of 4", "This is similar to a commonly used password."),
    "Password1234!": ("strength 1 of 4", "Capitalization doesn't help very much; a good"),
    "ussdconsole2026": ("only the program's name", "repeated or dressed in digits and punctuation"),
    "Kakuma1Kakuma1": ("strength 0 of 4", "Avoid repeated words and characters; a good"),
}


@pytest.mark.parametrize("weak", list(WEAK))
def test_the_passphrases_found_accepted_are_refused_with_the_reason_in_one_line(home, tmp_path, weak):
    with_sites(home, tmp_path, "Kakuma1", "Dadaab")
    line = refusal(ussd(home, *ADD, passfile(tmp_path, "alice", weak)))
    how_weak, said = WEAK[weak]
    assert how_weak in line and said in line, line
    assert "a good passphrase is a short sentence" in line
    assert weak not in line  # never echoed
    nobody_added(home)


def test_the_estimators_suggestion_comes_with_its_score(home, tmp_path):
    line = refusal(ussd(home, *ADD, passfile(tmp_path, "alice", "qwertyuiopasdf")))
    assert "too easy to guess (strength 1 of 4, at least 3 needed):" in line
    assert "Add another word or two. Uncommon words are better; a good" in line  # zxcvbn's own suggestion


def test_a_strong_passphrase_is_accepted(home, tmp_path):
    with_sites(home, tmp_path, "Kakuma1", "Dadaab")
    proc = ussd(home, "--json", *ADD, passfile(tmp_path, "alice", "kettle on the third shelf sings"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["name"] == "alice" and key_path(home, "alice").exists()


@pytest.mark.parametrize("dressed", ["Hagadera 2026 hagadera!", "aredagah 99 Hagadera", "Hagadera2026!"])
def test_a_site_of_the_store_dressed_up_is_refused_and_only_where_the_store_has_it(tmp_path, dressed):
    from core.home import Home

    elsewhere = Home(tmp_path / "elsewhere").ensure()  # no Hagadera here: the same passphrase passes
    assert ussd(elsewhere, *ADD, passfile(tmp_path, "alice", dressed)).returncode == 0

    home = Home(tmp_path / "home").ensure()
    with_sites(home, tmp_path, "Kakuma1", "Hagadera")
    line = refusal(ussd(home, *ADD, passfile(tmp_path, "alice", dressed)))
    assert "only a site's name" in line or "too easy to guess" in line, line
    assert dressed not in line and "a good passphrase is" in line
    nobody_added(home)


def test_the_operators_name_dressed_up_is_refused_though_the_estimator_passes_it(home, tmp_path):
    line = refusal(ussd(home, *ADD, passfile(tmp_path, "alice", "ALICE 2024 alice")))
    assert "only the operator's own name" in line


PROBE = """
import json, sys
from console.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "zxcvbn": "zxcvbn" in sys.modules}), file=sys.stderr)
"""


def probe(home, *argv: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, "--home", str(home.root), *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_the_estimator_is_loaded_only_when_a_passphrase_is_judged(home, tmp_path):
    with_sites(home, tmp_path, "Kakuma1")
    assert probe(home, "status") == {"code": 0, "zxcvbn": False}
    assert probe(home, *ADD, passfile(tmp_path, "alice")) == {"code": 0, "zxcvbn": True}
    assert probe(home, "operator", "list") == {"code": 0, "zxcvbn": False}
    assert probe(home, "retention", "set", "40", "--operator", "alice", "--reason", "long trips",
                 "--passphrase-file", passfile(tmp_path, "alice")) == {"code": 0, "zxcvbn": False}


def test_every_sentence_the_estimator_can_say_is_in_the_catalogs_list():
    """zxcvbn gives its feedback in English; ``ESTIMATOR_WORDS`` lists its sentences for the catalogs,
    so a refusal is said in the operator's language. A zxcvbn that says a new sentence fails here."""
    import ast
    import zxcvbn.feedback

    from core.signing.passphrases import ESTIMATOR_WORDS

    tree = ast.parse(open(zxcvbn.feedback.__file__, encoding="utf-8").read())
    said = {ast.literal_eval(node.args[0]) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_"}
    assert len(said) > 20 and said == set(ESTIMATOR_WORDS)
