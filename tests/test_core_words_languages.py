"""Words made in ``core/`` for a person, in the operator's language: the report's need, status,
wait and reason labels on its HTML and PDF pages (while ``--json`` and the CSV tables keep the
English data), the retention policy's words, the reasons' words, and the export views' names;
English unchanged, and words kept as data (an alert's summary) English in every language."""

from __future__ import annotations

import csv

import pytest
from matplotlib.figure import Figure

from core import Receiver, i18n
from core.report import charts, html, labels, sections
from core.report.figures import compute
from core.report.period import parse_period
from core.rules import events
from core.rules.batch import QuarantineRow
from core.rules.reasons import REASONS, in_english, reason_words
from core.rules.retention import describe, in_english as retention_in_english
from tests.support.cli import run_cli
from tests.support.console_pilot import screen_lines
from tests.support.console_support import fixed_app, press_and_settle, run_async, until
from tools.sample_store import FIXED_NOW

LANGS = ("es", "fr", "pt", "sw")
PERIOD = ("2024-01-01", "2024-05-02")  # the whole sample story
NO_LOCALE = {"LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": "", "LANG": "C.UTF-8"}

# What the report's tables say for water, an open case, the shortest wait and a bad checksum.
REPORT = {
    "en": ("water", "open", "under 1 hour", "checksum does not match"),
    "fr": ("eau", "ouvert", "moins d'une heure", "somme ne concorde pas"),
    "sw": ("maji", "wazi", "chini ya saa 1", "jumla hailingani"),
    "pt": ("água", "aberto", "menos de 1 hora", "soma não corresponde"),
    "es": ("agua", "abierto", "menos de 1 hora", "la suma no coincide"),
}
RETENTION = {"en": ("30 days", "1 day", "72.5 hours"), "fr": ("30 jours", "1 jour", "72,5 heures"),
             "sw": ("siku 30", "siku 1", "saa 72.5"), "pt": ("30 dias", "1 dia", "72,5 horas"),
             "es": ("30 días", "1 día", "72,5 horas")}


@pytest.fixture
def figures(sample_home):
    with Receiver(str(sample_home.db)) as r:
        return compute(r, parse_period(*PERIOD, FIXED_NOW), str(sample_home.root), {}, now=FIXED_NOW)


def _rows(f, title_en: str) -> list[list[str]]:
    """The rows of the report's table whose English title is ``title_en``, in the current language."""
    lang = i18n.language()
    i18n.select("en")
    index = [t.title for t in sections.tables(f)].index(title_en)
    i18n.select(lang)
    return sections.tables(f)[index].rows


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_the_reports_labels_are_in_the_language_and_its_figures_are_not(figures, lang):
    english = figures.as_json()
    i18n.select(lang)
    water, open_, shortest, checksum = REPORT[lang]
    assert water in [row[0] for row in _rows(figures, "People by need")]
    assert [row[0] for row in _rows(figures, "Cases by status now")][0] == open_
    assert [row[0] for row in _rows(figures, "Waiting (open and dispatched cases of the period)")][0] == shortest
    assert open_ in {row[-1].split(" (")[0] for row in _rows(figures, "Top of the dispatch ranking now")}
    assert checksum in [row[0] for row in _rows(figures, "Rejects by reason")]
    page = html.render(figures)
    assert all(word.replace("'", "&#x27;") in page for word in REPORT[lang])
    assert labels.notes(figures)[0] in page.replace("&#x27;", "'")
    if lang != "en":
        assert "under 1 hour" not in page and "checksum does not match" not in page
    assert figures.as_json() == english  # what --json and the exports write stays the English data
    assert {c.label for c in figures.waiting} >= {"under 1 hour", "over 3 days"}
    assert "checksum does not match" in {c.label for c in figures.rejects_by_reason}


@pytest.mark.parametrize("lang", LANGS)
def test_the_charts_name_needs_and_statuses_in_the_language(figures, lang):
    i18n.select(lang)
    drawn = {}
    for name in ("people_by_need", "cases_by_status"):
        ax = Figure().add_subplot()
        charts.CHARTS[name](ax, figures)
        ticks = ax.get_yticklabels() if name == "people_by_need" else ax.get_xticklabels()
        drawn[name] = {t.get_text() for t in ticks}
    assert REPORT[lang][0] in drawn["people_by_need"] and "water" not in drawn["people_by_need"]
    assert REPORT[lang][1] in drawn["cases_by_status"] and "open" not in drawn["cases_by_status"]


@pytest.mark.parametrize("lang", LANGS)
def test_the_reports_csv_tables_are_the_english_ones(sample_home, tmp_path, lang):
    written = {}
    for each in ("en", lang):
        target = tmp_path / each
        done = run_cli("--home", str(sample_home.root), "--lang", each, "report", "--since", PERIOD[0], "--until",
                       PERIOD[1], "--format", "csv", "--to", str(target), env=NO_LOCALE)
        assert done.returncode == 0, done.stderr
        written[each] = {p.name: _without_made_at(p) for p in sorted(target.rglob("*.csv"))}
    assert written["en"] and written[lang] == written["en"]
    assert "under 1 hour" in written["en"]["waiting.csv"]


def _without_made_at(path) -> str:
    """A CSV table as written, but the summary's moment of making (two runs may straddle a second)."""
    rows = list(csv.reader(path.open(encoding="utf-8", newline="")))
    if rows and "made_at" in rows[0]:
        at = rows[0].index("made_at")
        rows = [row[:at] + row[at + 1:] for row in rows]
    return "\n".join(",".join(row) for row in rows)


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_the_retention_policy_is_said_in_the_language(lang):
    i18n.select(lang)
    assert (describe(30 * 86400), describe(86400), describe(72.5 * 3600)) == RETENTION[lang]
    assert retention_in_english(30 * 86400) == "30 days"  # for words kept as data


@pytest.mark.parametrize("lang", LANGS)
def test_every_reasons_words_are_in_the_language_and_an_alert_keeps_english(lang):
    i18n.select(lang)
    for code, words in REASONS.items():
        assert reason_words(code) != words.long, code
        assert reason_words(code, short=True) != (words.short or words.long), code
        assert in_english(code) == words.long
    assert reason_words("a_newer_code") == "a_newer_code"
    row = QuarantineRow(frame_id="A-1", case_key="k", frame_text="H1|2", first_frame_id="A-1", first_text="H1|1",
                        reason="same_frame_id_different_payload", first_seen=1.0, last_seen=1.0, seen_count=1,
                        source="inbox", status="open")
    assert "(same frame id, different values); held for an operator" in events.conflict(row).summary


@pytest.mark.parametrize("lang", LANGS)
@run_async
async def test_the_export_dialog_names_each_view_in_the_language_whole_at_80_columns(sample_home, lang):
    from console.dialogs.export_dialog import ExportDialog
    from console.export_views import VIEWS

    english = [f"{name}: {v.title}" for name, v in VIEWS.items()]
    i18n.select(lang)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "2", "e")
        await until(lambda: isinstance(app.screen, ExportDialog))
        await pilot.pause()
        shown = screen_lines(app)
    for name, v in VIEWS.items():
        words = i18n._("%(view)s: %(what)s", view=name, what=i18n._(v.title))
        assert words not in english and any(words in line for line in shown), words  # whole, never cut


PAUSED = {"en": "alert targets PAUSED since this home was restored at", "fr": "cibles d'alerte EN PAUSE depuis",
          "sw": "walengwa wa tahadhari WAMESITISHWA tangu", "pt": "destinos de alerta EM PAUSA desde",
          "es": "destinos de alerta EN PAUSA desde"}


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_the_alert_pause_line_is_in_the_language_and_the_json_is_not(sample_home, lang):
    from core.alerts.pause import write_marker

    write_marker(sample_home.root, "b\u00e9-1.tar.age", 0.0)
    argv = ("--home", str(sample_home.root), "--lang", lang, "status")
    shown = " ".join(run_cli(*argv, env=NO_LOCALE).stdout.split())
    assert PAUSED[lang] in shown and (lang == "en" or PAUSED["en"] not in shown)
    assert "b\\xe9-1.tar.age" in shown and "bé-1" not in shown  # the backup's name is outside text
    english = run_cli("--home", str(sample_home.root), "status", "--json", env=NO_LOCALE).stdout
    assert run_cli(*argv, "--json", env=NO_LOCALE).stdout == english


@pytest.mark.parametrize("lang", LANGS)
def test_a_conflicts_resolution_is_said_in_the_language(lang):
    from core.rules.words import RESOLUTIONS, resolution_in_english, resolution_words

    i18n.select(lang)
    for code, words in RESOLUTIONS.items():
        assert resolution_words(code) != words.long and resolution_words(code, short=True) != words.short, code
        assert resolution_in_english(code) == words.long
    assert resolution_words("a_newer_code\x1b") == "a_newer_code\\x1b"  # an unknown code, escaped


WRONG = {"en": ("expected 7 fields, got 5", "checksum says #"), "fr": ("7 champs attendus, 5 reçus", "la somme dit #"),
         "sw": ("sehemu 7 zinatarajiwa, zipo 5", "jumla inasema #"), "pt": ("esperados 7 campos, recebidos 5",
                                                                           "a soma diz #"),
         "es": ("se esperaban 7 campos, llegaron 5", "la suma dice #")}


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_what_was_wrong_with_a_reject_is_said_in_the_language(home, tmp_path, lang):
    from core.rules.explain import OUTCOME_WORDS, explain_reject, outcome_words
    from tests.support.helpers import frame

    i18n.select(lang)
    fields, checksum = WRONG[lang]
    assert explain_reject("kak05-1", "H1|1|Kak|MED|3", "bad_grammar") == fields
    assert explain_reject("x-1", "H1|1|S|MED|3|86|#00", "bad_trailer").startswith(checksum)
    said = explain_reject("x-1", "H1|1|S|med|3|86|#00", "bad_grammar")
    assert (said == "need must be 3 capital letters, got 'med'") == (lang == "en") and "'med'" in said
    assert (outcome_words("APPLIED") == "applied") == (lang == "en") and outcome_words("NEW\x1b") == "NEW\\x1b"
    assert set(OUTCOME_WORDS.values()) >= {"applied", "rejected: bad checksum"}  # the table stays English
    i18n.select("en")
    good = frame(1, "Kakuma1", "MED", 3, 86)
    (tmp_path / "in.txt").write_text(f"A-1 {good[:-2]}00\n", encoding="utf-8")
    done = run_cli("--home", str(home.root), "--lang", lang, "ingest", str(tmp_path / "in.txt"), env=NO_LOCALE)
    shown = " ".join(done.stdout.split())
    i18n.select(lang)
    assert done.returncode == 0 and REPORT[lang][3] in shown and outcome_words("REJECT_BAD_CRC") in shown, shown


BACKUPS = {"en": "backups: none verified yet", "fr": "sauvegardes : aucune vérifiée pour l'instant",
           "sw": "nakala za akiba: hakuna iliyothibitishwa bado",
           "pt": "cópias de segurança: nenhuma verificada ainda",
           "es": "copias de seguridad: ninguna verificada aún"}


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_the_reports_health_says_the_backups_in_the_language(sample_home, lang):
    from core.report.health import report_health

    i18n.select(lang)
    with Receiver(str(sample_home.db)) as r:
        f = compute(r, parse_period(*PERIOD, FIXED_NOW), str(sample_home.root), report_health(sample_home, r, []),
                    now=FIXED_NOW)
    health = dict((row[0], row[1]) for row in sections.tables(f)[-2].rows)
    assert health[i18n._("backups")].startswith(BACKUPS[lang])
    parts = health[i18n._("observer / sweep")]
    assert " / " in parts and (lang == "en" or "off" not in parts.split())


@pytest.mark.parametrize("lang", LANGS)
def test_the_frame_commands_refusal_stays_one_english_sentence(lang):
    from core.rules.compose import BadBody, compose

    i18n.select(lang)
    with pytest.raises(BadBody) as refused:
        compose("H1|1|Kakuma1|med|3|86", None)
    assert str(refused.value) == "need must be 3 capital letters, got 'med'"
