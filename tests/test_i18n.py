"""The operator's language: the catalogs complete against the source (and the check shown to
fail), the language chosen by ``--lang``, ``[console] language`` and the environment in that
order, English for a word a catalog lacks, and ``status`` in every shipped language while its
``--json`` stays byte for byte the English one."""

from __future__ import annotations

import json

import pytest

from core import i18n
from core.config import load_console_config
from core.i18n import catalog_path, shipped
from tests.support.catalogs import marked, problems
from tests.support.cli import ROOT, cli, run_cli

LANGS = ("es", "fr", "pt", "sw")
SAMPLE = ROOT / "console" / "demo" / "samples" / "01-session.txt"
NO_LOCALE = {"LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": "", "LANG": "C.UTF-8"}

# A word of status's tables and of its usage error in each language, as the catalog has it.
TOTALS = {"en": "Totals", "fr": "Totaux", "sw": "Jumla", "pt": "Totais", "es": "Totales"}
USAGE = {"en": "usage: ", "fr": "utilisation : ", "sw": "matumizi: ", "pt": "utilização: ", "es": "uso: "}
EXPECTED = {"en": "ussd-console status: error: argument --home: expected one argument",
            "fr": "ussd-console status : erreur : argument --home : un argument attendu",
            "sw": "ussd-console status: kosa: hoja --home: hoja moja inatarajiwa",
            "pt": "ussd-console status: erro: argumento --home: esperado um argumento",
            "es": "ussd-console status: error: argumento --home: se esperaba un argumento"}
UNRECOGNIZED = {"en": "unrecognized arguments: --bogus", "fr": "arguments non reconnus : --bogus",
                "sw": "hoja zisizotambulika: --bogus", "pt": "argumentos não reconhecidos: --bogus",
                "es": "argumentos no reconocidos: --bogus"}


@pytest.fixture(autouse=True)
def english_again():
    """A test that selects a language in this process leaves English behind it, as main() does per run."""
    yield
    i18n.select(i18n.SOURCE)
    i18n.shipped.cache_clear()
    i18n._translations.cache_clear()


@pytest.fixture
def fed(home):
    assert cli(home, "ingest", str(SAMPLE), env=NO_LOCALE).returncode == 0
    return home


def test_the_four_languages_ship():
    assert shipped() == ("en", *LANGS)


@pytest.mark.parametrize("lang", LANGS)
def test_each_catalog_has_every_marked_word_translated_with_its_placeholders(lang):
    wanted = marked()
    assert ("%(n)s alert pending", "%(n)s alerts pending") in wanted and "Totals" in wanted
    assert problems(catalog_path(lang), wanted) == []


def test_the_catalog_check_fails_on_each_kind_of_fault(tmp_path):
    po = tmp_path / "ussd.po"
    po.write_text('''msgid ""
msgstr ""
"Language: fr\\n"
"Plural-Forms: nplurals=2; plural=(n > 1);\\n"
"Content-Type: text/plain; charset=utf-8\\n"

#, fuzzy
msgid "Totals"
msgstr "Totaux"

msgid "cases"
msgstr ""

msgid "home %(path)s"
msgstr "dossier %(chemin)s"

msgid "%(prog)s: error: %(message)s\\n"
msgstr "%(prog)s : erreur : %(message)s"

msgid "%(n)s fault"
msgid_plural "%(n)s faults"
msgstr[0] "%(n)s panne"
msgstr[1] ""

msgid "gone"
msgstr "parti"
''', encoding="utf-8")
    wanted = {"Totals", "cases", "home %(path)s", "%(prog)s: error: %(message)s\n", ("%(n)s fault", "%(n)s faults"),
              "people"}
    found = "\n".join(problems(po, wanted))
    assert "missing 'people'" in found
    assert "fuzzy 'Totals'" in found
    assert "untranslated 'cases'" in found
    assert "untranslated ('%(n)s fault', '%(n)s faults')" in found
    assert "placeholders of 'dossier %(chemin)s' differ" in found
    assert "newline at the end of" in found
    assert "'gone' is no longer in the source" in found


def test_a_word_a_catalog_lacks_is_english_never_blank(tmp_path, monkeypatch):
    po = tmp_path / "fr" / "LC_MESSAGES" / "ussd.po"
    po.parent.mkdir(parents=True)
    po.write_text('''msgid ""
msgstr ""
"Language: fr\\n"
"Plural-Forms: nplurals=2; plural=(n > 1);\\n"
"Content-Type: text/plain; charset=utf-8\\n"

msgid "Totals"
msgstr "Totaux"

msgid "cases"
msgstr ""

#, fuzzy
msgid "people"
msgstr "gens"

msgid "%(n)s fault"
msgid_plural "%(n)s faults"
msgstr[0] "%(n)s panne"
msgstr[1] ""
''', encoding="utf-8")
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    i18n.shipped.cache_clear()
    i18n._translations.cache_clear()
    i18n.select(i18n.check_language("fr"))
    assert i18n._("Totals") == "Totaux"
    assert i18n._("cases") == "cases"  # untranslated
    assert i18n._("people") == "people"  # fuzzy: a guess is not shown
    assert i18n.ngettext("%(n)s fault", "%(n)s faults", 3, n=3) == "3 faults"  # one form missing: all English
    assert i18n._("never marked") == "never marked"


def test_plural_forms_and_numbers_follow_the_language():
    i18n.select("fr")
    assert [i18n.ngettext("%(n)s fault", "%(n)s faults", n, n=n) for n in (0, 1, 2)] == [
        "0 panne", "1 panne", "2 pannes"]  # French counts 0 as one
    assert i18n.number(1234567) == "1\u202f234\u202f567"
    i18n.select("en")
    assert [i18n.ngettext("%(n)s fault", "%(n)s faults", n, n=n) for n in (0, 1, 2)] == [
        "0 faults", "1 fault", "2 faults"]
    assert i18n.number(1234567) == "1,234,567" and i18n.number(1.5) == "1.5" and i18n.number(12.0) == "12"
    i18n.select("es")
    assert i18n.number(1234567) == "1.234.567" and i18n.moment(None) == "-"


def test_the_flag_then_the_config_then_the_environment_then_english():
    env = {"LANGUAGE": "", "LC_ALL": "pt_MZ.UTF-8", "LANG": "fr_FR.UTF-8"}
    assert i18n.choose("sw", "fr", env) == "sw"
    assert i18n.choose(None, "es", env) == "es"
    assert i18n.choose(None, None, env) == "pt"  # LC_ALL before LANG
    assert i18n.choose(None, None, {"LANGUAGE": "de:es_CO", "LANG": "fr_FR"}) == "es"  # the first shipped in the list
    assert i18n.choose(None, None, {"LANG": "de_DE.UTF-8"}) == "en"  # not shipped: English, no error
    assert i18n.choose(None, None, {"LC_ALL": "C", "LANG": "fr_FR"}) == "en"
    assert i18n.choose(None, None, {}) == "en"
    assert i18n.choose("fr-FR", None, {}) == "fr"
    with pytest.raises(i18n.UnknownLanguage, match="en, es, fr, pt, sw"):
        i18n.choose("de", None, {})


def test_an_unknown_language_is_one_clear_line_naming_the_shipped_ones(fed):
    r = cli(fed, "status", "--lang", "klingon", env=NO_LOCALE)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "ussd-console: error: unknown language 'klingon'; the shipped languages are en, es, fr, pt, sw\n"
    fed.config.write_text('[console]\nlanguage = "de"\n', encoding="utf-8")
    r = cli(fed, "status", env=NO_LOCALE)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr == f"ussd-console: error: {fed.config} [console] language: unknown language 'de'; " \
                       "the shipped languages are en, es, fr, pt, sw\n"
    with pytest.raises(ValueError, match=r"\[console\].*language.*en, es, fr, pt, sw"):
        load_console_config(fed.config)
    fed.config.write_text('[console]\nlanguage = 5\n', encoding="utf-8")
    r = cli(fed, "status", env=NO_LOCALE)
    assert r.returncode == 2 and "[console] language must be a language code in quotes" in r.stderr


def test_the_config_chooses_and_the_flag_overrides_it(fed):
    fed.config.write_text('[console]\nlanguage = "fr"\n', encoding="utf-8")
    assert load_console_config(fed.config).language == "fr"
    assert "Totaux" in cli(fed, "status", env=NO_LOCALE).stdout
    assert "Jumla" in cli(fed, "--lang", "sw", "status", env=NO_LOCALE).stdout
    fed.config.write_text("", encoding="utf-8")
    assert "Totales" in cli(fed, "status", env={**NO_LOCALE, "LANG": "es_CO.UTF-8"}).stdout


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_status_speaks_each_language_and_its_json_is_the_english_one(fed, lang):
    english = cli(fed, "status", "--json", env=NO_LOCALE)
    assert english.returncode == 0
    for way in (["--lang", lang], []):
        env = NO_LOCALE if way else {**NO_LOCALE, "LANG": f"{lang}.UTF-8"}
        r = cli(fed, "status", "--json", *way, env=env)
        assert r.returncode == 0 and r.stdout == english.stdout  # byte for byte: codes and field names stay
        human = cli(fed, "status", *way, env=env)
        assert human.returncode == 0 and TOTALS[lang] in human.stdout, human.stdout
        assert all(len(line) <= 80 for line in human.stdout.splitlines())
        assert json.loads(r.stdout)["cases"] == 3


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_a_usage_error_comes_in_the_language_with_exit_2(fed, lang):
    r = cli(fed, "status", "--bogus", "--lang", lang, env=NO_LOCALE)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(USAGE[lang] + "ussd-console "), r.stderr
    assert UNRECOGNIZED[lang] in r.stderr and "Traceback" not in r.stderr
    r = run_cli("--lang", lang, "status", "--home", env=NO_LOCALE)  # status's own parser, its own usage line
    assert r.returncode == 2 and r.stderr.startswith(USAGE[lang] + "ussd-console status "), r.stderr
    assert r.stderr.splitlines()[-1] == EXPECTED[lang]


def test_status_in_french_counts_with_plural_forms(fed):
    out = cli(fed, "status", "--lang", "fr", env=NO_LOCALE).stdout
    assert "cas par état : 3 ouverts, 0 envoyé" in out
    assert "conservation : 30 jours (par défaut)" in out


def test_english_status_reads_as_before(fed):
    out = run_cli("--home", str(fed.root), "status", env=NO_LOCALE).stdout
    assert "Totals" in out and "cases by status: 3 open, 0 dispatched, 0 served, 0 closed" in out
    assert "retention: 30 days (the default)" in out


HELP = {"en": "machine-readable output: one JSON object per line",
        "fr": "sortie pour les machines : un objet JSON par ligne",
        "sw": "matokeo kwa mashine: kitu kimoja cha JSON kwa kila mstari",
        "pt": "saída para máquinas: um objeto JSON por linha",
        "es": "salida para máquinas: un objeto JSON por línea"}


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_status_help_comes_in_the_language(lang):
    r = run_cli("--lang", lang, "status", "--help", env=NO_LOCALE)
    assert r.returncode == 0 and r.stdout.startswith(USAGE[lang] + "ussd-console status ")
    assert HELP[lang] in " ".join(r.stdout.split())  # the words as wrapped at 80 columns


def test_an_empty_table_reads_the_language_way(fed):
    assert "Fichiers de la boîte de réception : aucun" in cli(fed, "status", "--lang", "fr", env=NO_LOCALE).stdout
    assert "Inbox files: none" in cli(fed, "status", env=NO_LOCALE).stdout


CASES = {"en": ("Cases 1-3 of 3", "MED medical"), "fr": ("Cas 1-3 sur 3", "MED médical"),
         "sw": ("Kesi 1-3 kati ya 3", "MED matibabu"), "pt": ("Casos 1-3 de 3", "MED médico"),
         "es": ("Casos 1-3 de 3", "MED médico")}


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_cases_and_ranking_speak_each_language_and_their_json_is_the_english_one(fed, lang):
    for command in ("cases", "ranking"):
        english = cli(fed, command, "--json", env=NO_LOCALE)
        assert english.returncode == 0 and english.stdout.count("\n") == 3
        assert cli(fed, command, "--json", "--lang", lang, env=NO_LOCALE).stdout == english.stdout
    out = cli(fed, "cases", "--lang", lang, env=NO_LOCALE).stdout
    title, need = CASES[lang]
    assert out.startswith(title) and need.split()[1] in out and "\\x" not in out  # an accented word as itself
    assert all(len(line) <= 80 for line in out.splitlines())


TOP_HELP = {"en": "Without a command, opens the console.", "fr": "Sans commande, ouvre la console.",
            "sw": "Bila amri, hufungua console.", "pt": "Sem comando, abre a consola.",
            "es": "Sin comando, abre la consola."}


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_the_programs_help_comes_in_the_language_with_the_commands_as_typed(lang):
    r = run_cli("--lang", lang, "--help", env=NO_LOCALE)
    assert r.returncode == 0 and r.stdout.startswith(USAGE[lang] + "ussd-console ")
    assert TOP_HELP[lang] in " ".join(r.stdout.split())
    examples = r.stdout.split("\n\n")[-1].splitlines()
    assert [line.split("  ")[1] for line in examples[1:3]] == ["ussd-console demo", "ussd-console --home /srv/ussd"]


def _signed_home(home, tmp_path, lang: str) -> list[tuple]:
    """A home where alice marks a case and sets the retention with ``--lang lang``; what its audit
    entries after the first (her own key's) say, as signed."""
    from tests.support.signing import A1, B2, add_operators, ingest, sign, snapshot

    add_operators(home, tmp_path, "alice")
    ingest(home, tmp_path, [A1, B2])
    assert sign(home, tmp_path, "case", "mark", "B-2", "dispatched", "--lang", lang) == 0
    assert sign(home, tmp_path, "retention", "set", "40", "--lang", lang) == 0
    return [(e["action"], e["target"], e["reason"], e["payload"]) for e in snapshot(home)["audit"][1:]]


def test_a_signature_made_in_one_language_verifies_the_same_in_every_other(home, tmp_path):
    from core.home import Home

    signed = _signed_home(home, tmp_path, "fr")
    english = Home(tmp_path / "english").ensure()
    (tmp_path / "en").mkdir()
    assert _signed_home(english, tmp_path / "en", "en") == signed  # the same bytes signed, in any language
    verdicts = {lang: cli(home, "audit", "verify", "--json", "--lang", lang, env=NO_LOCALE) for lang in ("en", *LANGS)}
    assert {(r.returncode, r.stdout) for r in verdicts.values()} == {(0, verdicts["en"].stdout)}
    assert json.loads(verdicts["en"].stdout.splitlines()[-1])["ok"] is True


def test_the_backup_line_in_french_keeps_outside_text_plain():
    from console.commands.status import _backup_line

    i18n.select("fr")
    line = _backup_line({"last_verified": {"at": 1_764_750_000, "file": "/media/usb/b\u00e9-1.tar.age", "size": 1234},
                         "every": None, "fault": "disk\x1b[31m full"}).plain
    assert line.startswith("sauvegardes : dernière vérifiée le ") and "(1\u202f234 octets)" in line
    assert "/media/usb/b\\xe9-1.tar.age" in line and "\x1b" not in line  # a file name and a fault are outside text
    assert "| non programmées ([backup] every dans config.toml) | ! disk" in line
    i18n.select("en")
    assert _backup_line({"last_verified": None, "every": 86400}).plain == "backups: none verified yet"


def test_a_marked_error_is_english_in_its_str_and_the_language_where_said():
    """``str()`` of a core error stays English (logs, --json); ``said`` gives the operator's language
    with the outside text in it escaped, and an error of one finished string stays as it was."""
    from core.rules.text import said
    from core.signing.keys import ActionError

    error = ActionError("home %(path)s", path="/srv/ussd\x1b[2J")
    unmarked = ActionError("no such thing: caf\xe9")
    try:
        i18n.select("fr")
        assert str(error) == "home /srv/ussd\x1b[2J"
        assert said(error) == "dossier /srv/ussd\\x1b[2J"
        assert said(unmarked) == "no such thing: caf\\xe9"
    finally:
        i18n.select(i18n.SOURCE)
    assert said(error) == "home /srv/ussd\\x1b[2J"


def test_an_error_whose_words_are_said_already_is_shown_as_it_is():
    """One mechanism for our words with their outside text escaped: an error carrying a ``Said``
    (``CommandError.told`` makes one) is shown as it is, its first line; a plain ``str`` is outside text."""
    from console.errors import CommandError
    from core.rules.text import Said, said

    told = CommandError.told("d\xe9j\xe0 %(path)s\nsecond line", path="/srv/caf\xe9\x1b[2J[b]")
    assert isinstance(told.args[0], Said) and said(told) == "d\xe9j\xe0 /srv/caf\\xe9\\x1b[2J[b]"
    assert isinstance(said(told), Said)  # shown as it is where said() is shown, too
    assert said(CommandError("d\xe9j\xe0 /srv/caf\xe9")) == "d\\xe9j\\xe0 /srv/caf\\xe9"
    assert said(ValueError(Said("d\xe9j\xe0 vu"))) == "d\xe9j\xe0 vu"
