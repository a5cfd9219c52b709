"""The errors core/ makes for the operator (the store's, signing's, retention's, the lifecycle's,
the checkpoint's, an owner-only file's, a config key's) come out of the command line in each
shipped language, the outside text in them escaped; in English each is the line it always was,
and the exit code and any ``--json`` output are the same in every language."""

from __future__ import annotations

import json

import pytest

from core import i18n
from core.rules.text import escape_text
from tests.support.cli import cli
from tests.support.signing import A1, A1_FIX, B2, add_operators, ingest, passfile

LANGS = ("es", "fr", "pt", "sw")
NO_LOCALE = {"LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": "", "LANG": "C.UTF-8"}
ODD = "caf\u00e9\x1b[31m"  # outside text: a letter to escape and a terminal control sequence


@pytest.fixture
def signed(home, tmp_path):
    """alice (every role), a conflict in quarantine, and the files the refusals below are given."""
    add_operators(home, tmp_path, "alice")
    ingest(home, tmp_path, [A1, B2, A1_FIX])
    (tmp_path / "wrong.pass").write_text("not alice's passphrase\n", encoding="utf-8")
    (tmp_path / "wrong.pass").chmod(0o600)
    (tmp_path / f"{ODD}.pass").write_text("alice passphrase\n", encoding="utf-8")
    (tmp_path / f"{ODD}.pass").chmod(0o644)
    (tmp_path / "checkpoint.txt").write_text("written down wrong\n", encoding="utf-8")
    (tmp_path / f"{ODD}.db").write_text("a text file, not a store\n", encoding="utf-8")
    return home


def tr(lang: str, msgid: str, **values) -> str:
    i18n.select(lang)
    try:
        return i18n._("ussd-console: error: %(reason)s", reason=i18n._(msgid, **values))
    finally:
        i18n.select(i18n.SOURCE)


def signing(tmp_path, *argv: str, passphrase: str | None = None) -> list[str]:
    return [*argv, "--operator", "alice", "--reason", "checked", "--passphrase-file",
            passphrase or passfile(tmp_path, "alice")]


# name -> (argv from tmp_path, English line, its msgid and values as the operator's language fills them)
CASES = {
    "store: no quarantine item": (
        lambda t: signing(t, "resolve", "999", "--keep-first"),
        "no quarantine item #999", "no quarantine item #%(id)s", {"id": 999}),
    "rules: retention below the floor": (
        lambda t: signing(t, "retention", "set", "2"),
        "retention of 2 days refused: the floor is 72 hours, whatever the signature",
        "retention of %(period)s refused: the floor is 72 hours, whatever the signature", {"period": "2"}),
    "signing: wrong passphrase": (
        lambda t: signing(t, "retention", "set", "40", passphrase=str(t / "wrong.pass")),
        "wrong passphrase for operator alice (or a damaged key file)",
        "wrong passphrase for operator %(name)s (or a damaged key file)", {"name": "alice"}),
    "home: a passphrase file open to others": (
        lambda t: signing(t, "retention", "set", "40", passphrase=str(t / f"{ODD}.pass")),
        "the passphrase file {path} is open to others (mode 0644); run: chmod 600 {path}",
        "%(what)s %(path)s is open to others (mode %(mode)s); run: chmod 600 %(path)s", {"mode": "0644"}),
    "rules: a lifecycle move": (
        lambda t: signing(t, "case", "mark", "A-1", "open"),
        "the case is already open; nothing to sign", "the case is already %(status)s; nothing to sign", {}),
    "signing: a checkpoint": (
        lambda t: ["audit", "verify", "--checkpoint", str(t / "checkpoint.txt")],
        "no checkpoint found (a line starting with ussd-checkpoint)",
        "no checkpoint found (a line starting with %(magic)s)", {"magic": "ussd-checkpoint"}),
    "store: not a store": (
        lambda t: ["status", "--db", str(t / f"{ODD}.db")],
        "{db} is not a SQLite database, so not a store of this program; it was left unchanged",
        "%(target)s is not a SQLite database, so not a store of this program; it was left unchanged", {}),
}


def english_line(words: str, tmp_path) -> str:
    return "ussd-console: error: " + words.format(path=escape_text(str(tmp_path / f"{ODD}.pass")),
                                                  db=escape_text(str(tmp_path / f"{ODD}.db")))


@pytest.mark.parametrize("case", CASES)
def test_each_modules_error_is_the_same_english_line_and_in_the_language(signed, tmp_path, case):
    argv, english_words, msgid, values = CASES[case]
    argv = argv(tmp_path)
    english = cli(signed, *argv, env=NO_LOCALE)
    line = english_line(english_words, tmp_path)
    assert english.returncode == 2 and english.stderr.splitlines()[-1] == line, english.stderr
    escaped = line.split(": error: ", 1)[1]
    for lang in LANGS:
        r = cli(signed, *argv, "--lang", lang, env=NO_LOCALE)
        last = r.stderr.splitlines()[-1]
        assert r.returncode == english.returncode, (lang, r.stderr)
        assert last != line and "\x1b" not in r.stderr, (lang, last)
        if case == "rules: retention below the floor":  # the period in the language's words too
            i18n.select(lang)
            values = {"period": i18n.ngettext("%(n)s day", "%(n)s days", 2, n=i18n.number(2))}
        if case == "rules: a lifecycle move":
            i18n.select(lang)
            values = {"status": i18n._("open")}
        if case == "home: a passphrase file open to others":
            i18n.select(lang)
            values = {**values, "what": i18n._("the passphrase file"), "path": escape_text(str(tmp_path / f"{ODD}.pass"))}
        if case == "store: not a store":
            values = {"target": escape_text(str(tmp_path / f"{ODD}.db"))}
        assert last == tr(lang, msgid, **values), (lang, last)
    if "\\x1b" in escaped:  # the outside text is escaped once, as in English, and the language's letters stay
        french = cli(signed, *argv, "--lang", "fr", env=NO_LOCALE).stderr.splitlines()[-1]
        assert "caf\\xe9\\x1b[31m" in french and "\\\\" not in french, french


def test_the_words_are_the_catalogs_own(signed, tmp_path):
    """One line read as the operator reads it, not through the catalog: the test above cannot pass
    on a message that stays English in every language."""
    r = cli(signed, *signing(tmp_path, "retention", "set", "2"), "--lang", "fr", env=NO_LOCALE)
    assert r.stderr.splitlines()[-1] == ("ussd-console : erreur : conservation de 2 jours refusée : le minimum est "
                                        "de 72 heures, quelle que soit la signature")
    r = cli(signed, *signing(tmp_path, "resolve", "999", "--keep-first"), "--lang", "es", env=NO_LOCALE)
    assert r.stderr.splitlines()[-1] == "ussd-console: error: no hay ningún elemento de cuarentena n.º 999"


def test_json_output_and_exit_codes_do_not_change_with_the_language(signed, tmp_path):
    argv = signing(tmp_path, "resolve", "999", "--keep-first", "--json")
    english = cli(signed, *argv, env=NO_LOCALE)
    for lang in LANGS:
        r = cli(signed, *argv, "--lang", lang, env=NO_LOCALE)
        assert (r.returncode, r.stdout) == (english.returncode, english.stdout), lang


@pytest.mark.parametrize("lang", LANGS)
def test_a_bad_config_key_is_in_the_language_and_the_key_stays(signed, tmp_path, lang):
    signed.config.write_text("[inbox]\nbogus = 1\n", encoding="utf-8")
    frames = tmp_path / "frames.txt"
    english = cli(signed, "ingest", str(frames), env=NO_LOCALE)
    known = ("batch_lines, evict_every, id_columns, keep_originals, max_file_bytes, observer, phone_columns, "
             "settle_time, sweep, sweep_interval, text_columns")
    where = f"{signed.config} [inbox]"
    assert english.stderr.splitlines()[-1] == f"ussd-console: error: {where}: unknown setting 'bogus' (known: {known})"
    r = cli(signed, "ingest", str(frames), "--lang", lang, env=NO_LOCALE)
    assert r.returncode == english.returncode == 2
    last = r.stderr.splitlines()[-1]
    assert last == tr(lang, "%(where)s: unknown setting %(key)s (known: %(known)s)", where=where, key="'bogus'",
                      known=known) and last != english.stderr.splitlines()[-1], last


@pytest.mark.parametrize("lang", LANGS)
def test_a_bad_value_keeps_its_file_and_key_and_is_said_whole_in_the_language(signed, tmp_path, lang):
    """A refusal inside a refusal (the file and table, then the setting's own words) is in the
    language all through."""
    signed.config.write_text("[inbox]\nsettle_time = true\n", encoding="utf-8")
    frames = tmp_path / "frames.txt"
    english = cli(signed, "ingest", str(frames), env=NO_LOCALE).stderr.splitlines()[-1]
    where = f"{signed.config} [inbox]"
    assert english == f"ussd-console: error: {where}: inbox setting settle_time must be a number, not True"
    i18n.select(lang)
    inner = i18n._("%(section)s setting %(key)s must be a number, not %(value)s", section="inbox", key="settle_time",
                   value="True")
    i18n.select(i18n.SOURCE)
    last = cli(signed, "ingest", str(frames), "--lang", lang, env=NO_LOCALE).stderr.splitlines()[-1]
    assert last == tr(lang, "%(where)s: %(reason)s", where=where, reason=inner), last


@pytest.fixture
def two_admins(home, tmp_path):
    add_operators(home, tmp_path, "alice", "bob")
    ingest(home, tmp_path, [A1, B2, A1_FIX])
    return home


def test_the_line_after_a_signature_is_in_the_language_and_json_stays_english(two_admins, tmp_path):
    r = cli(two_admins, *signing(tmp_path, "resolve", "1", "--keep-first"), "--lang", "fr", env=NO_LOCALE)
    assert r.returncode == 0 and "\nconflit n\u00b0 1 : " in r.stdout and "conflict #1" not in r.stdout, r.stdout
    r = cli(two_admins, *signing(tmp_path, "retention", "set", "40"), "--lang", "fr", env=NO_LOCALE)
    assert r.returncode == 0 and "la conservation est maintenant de 40 jours (r\u00e8gle)" in r.stdout, r.stdout
    assert "retention is now" not in r.stdout
    r = cli(two_admins, *signing(tmp_path, "retention", "set", "41", "--json"), "--lang", "fr", env=NO_LOCALE)
    done = json.loads(r.stdout)
    assert r.returncode == 0 and done["retention"]["retention_seconds"] == 41 * 86400 and "conservation" not in r.stdout


def test_a_held_requests_words_are_in_the_language_in_pending_and_english_in_its_json(two_admins, tmp_path):
    two_admins.config.write_text('[signing]\ncountersign = ["retention"]\n', encoding="utf-8")
    assert cli(two_admins, *signing(tmp_path, "retention", "set", "40"), env=NO_LOCALE).returncode == 0
    english = cli(two_admins, "pending", "--json", env=NO_LOCALE).stdout
    assert '"what": "change retention from 30 days to 40 days"' in english
    for lang, word in (("fr", "conservation"), ("sw", "kuhifadhi"), ("pt", "reten\u00e7\u00e3o"), ("es", "retenci\u00f3n")):
        assert cli(two_admins, "pending", "--json", "--lang", lang, env=NO_LOCALE).stdout == english
        out = cli(two_admins, "pending", "--lang", lang, env=NO_LOCALE).stdout
        assert word in out and "change retention" not in out, (lang, out)


def test_the_retention_fault_is_printed_in_the_language_and_kept_english_in_status_json(two_admins):
    from core import Receiver
    from tests.support.trust_support import sql

    with Receiver(str(two_admins.db)) as r:
        for seconds in (3600, 40 * 86400):
            sql(r, "INSERT INTO retention_policy (retention_seconds, set_at, set_by, reason, is_exception, audit_id) "
                   "VALUES (?, 1, ?, 'by hand', ?, NULL)", (seconds, ODD, False))
    english = cli(two_admins, "status", env=NO_LOCALE).stderr
    who = escape_text(ODD, 24)
    assert (f"RETENTION FAULT: retention policy #2 (40 days, set by {who}) is not applied: it has no signed audit "
            "entry; eviction uses 30 days (the default); 1 more such row; run `ussd-console audit verify`") in english
    as_data = cli(two_admins, "status", "--json", env=NO_LOCALE).stdout
    assert "it has no signed audit entry" in as_data
    for lang in LANGS:
        assert cli(two_admins, "status", "--json", "--lang", lang, env=NO_LOCALE).stdout == as_data
        i18n.select(lang)
        problem = i18n._("it has no signed audit entry")
        row = i18n._("retention policy #%(id)s (%(period)s, set by %(by)s) is not applied: %(problem)s", id=2,
                     period=i18n.ngettext("%(n)s day", "%(n)s days", 40, n=i18n.number(40)), by=who, problem=problem)
        line = i18n.ngettext("%(first)s; eviction uses %(period)s (the default); %(n)s more such row; run %(command)s",
                             "%(first)s; eviction uses %(period)s (the default); %(n)s more such rows; run %(command)s",
                             1, first=row, period=i18n.ngettext("%(n)s day", "%(n)s days", 30, n=i18n.number(30)),
                             n=1, command="`ussd-console audit verify`")
        fault = i18n._("RETENTION FAULT: ") + line
        i18n.select(i18n.SOURCE)
        said_ = cli(two_admins, "status", "--lang", lang, env=NO_LOCALE).stderr
        assert fault in said_.replace("\n", " ") or fault in said_, (lang, said_)
        assert "is not applied" not in said_ and "\x1b" not in said_, (lang, said_)


@pytest.mark.parametrize("lang", LANGS)
def test_the_log_rules_verdicts_are_english_data_and_said_in_the_language(lang):
    """A role rule's and a countersign rule's verdict on an entry (what `audit verify` and `approve`
    print): the English line as data, the language where said, the log's own text escaped in both."""
    from core.rules.text import in_language
    from core.signing import held, roles

    last = roles.entry_problem(7, "operator.retire", "alice", roles.EVERY, {"name": "alice"},
                               {"alice": (roles.EVERY, True)})
    odd = held.read_request(3, "retention", "bob", "k", 0.0, "p", "h", "r", {"action": ODD})
    assert last == "last admin: entry #7 retires alice, the last active admin"
    assert odd == f"malformed: request #3 holds {escape_text(ODD, 40)}, not an action a second admin approves"
    i18n.select(lang)
    try:
        assert in_language(last) == i18n._("last admin: entry #%(pos)s retires %(name)s, the last active admin",
                                           pos=7, name="alice") != last
        said = in_language(odd)
        assert said == i18n._("malformed: request #%(pos)s holds %(action)s, not an action a second admin approves",
                              pos=3, action=escape_text(ODD, 40)) != odd
        assert "\x1b" not in said and "\\x1b" in said
    finally:
        i18n.select(i18n.SOURCE)
