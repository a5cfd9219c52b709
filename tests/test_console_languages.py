"""The console in the operator's language: tabs, footer, header and notifications translated, the
palette finding an action by its translated title and by its English one, the signing preview's
frame in the language while what it signs stays the same, and ``ussd-console demo`` in French from
its first screen when the environment says French."""

from __future__ import annotations

import asyncio
import sys

import pytest
from textual.widgets import Footer, Tab
from textual.widgets._footer import FooterKey

from console import actions
from core import Receiver, i18n
from tests.support.console_pilot import palette_titles
from tests.support.console_support import fixed_app, notes_on_screen, press_and_settle, run_async, until

LANGS = ("es", "fr", "pt", "sw")
NO_LOCALE = {"LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": ""}
# What the first screen says in each language: its tab, a footer key, the header's counts.
FIRST_SCREEN = {
    "en": ("1 Cases", "q Quit", "cases 10 | people 150"),
    "fr": ("1 Cas", "q Quitter", "cas 10 | personnes 150"),
    "sw": ("1 Kesi", "q Toka", "kesi 10 | watu 150"),
    "pt": ("1 Casos", "q Sair", "casos 10 | pessoas 150"),
    "es": ("1 Casos", "q Salir", "casos 10 | personas 150"),
}


KEYS = ["⏎", "/", "s", "D", "S", "?", "q", "^p"]


def footer_words(app) -> list[str]:
    return [f"{key.key_display} {key.description}" for key in app.screen.query_one(Footer).query(FooterKey)]


def first_screen(app) -> dict:
    header = app.screen.query_one("#header")
    return {"tabs": [str(t.label) for t in app.screen.query(Tab)], "footer": footer_words(app),
            "header": header.render().plain}


@pytest.mark.parametrize("lang", ["en", *LANGS])
@run_async
async def test_the_first_screen_speaks_the_language(sample_home, lang):
    i18n.select(lang)
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot)
        seen = first_screen(app)
    tab, key, counts = FIRST_SCREEN[lang]
    assert tab in seen["tabs"], seen["tabs"]
    assert key in seen["footer"], seen["footer"]
    assert counts in seen["header"], seen["header"]
    assert [w.split(" ", 1)[0] for w in seen["footer"]] == KEYS  # the keys stay where they are, in every language


@run_async
async def test_the_palette_finds_an_action_by_its_translated_and_its_english_title(sample_home):
    i18n.select("fr")
    app = fixed_app(sample_home)
    sort = actions.BY_ID["sort"]
    assert sort.shown_title == "Trier les cas par la colonne suivante" and sort.palette_title.startswith("Sort")
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot)
        for query in ("colonne suivante", "next column"):
            titles = await palette_titles(app, pilot, query)
            assert any(t.startswith(sort.shown_title) for t in titles), (query, titles)
        keep = actions.BY_ID["keep_first"].shown_title
        assert keep.endswith("(signé)")
        assert any(t.startswith(keep) for t in await palette_titles(app, pilot, "keep the first"))


def test_the_help_rows_and_scopes_come_in_the_language():
    i18n.select("sw")
    rows = dict((action_id, what) for _keys, action_id, what in actions.help_rows("quarantine"))
    assert rows["keep_first"].startswith("Tatua mgongano: baki na toleo la kwanza (kwa saini)")
    assert "; inahitaji jukumu la resolver na mgongano wazi uliochaguliwa" in rows["keep_first"]
    assert actions.scope_title("quarantine") == "3 Karantini" and actions.scope_title("app") == "Kila mahali"
    i18n.select("en")
    assert dict((i, w) for _k, i, w in actions.help_rows("quarantine"))["keep_first"] == (
        "Resolve the conflict: keep the first version (signed); needs the resolver role and an open conflict selected")


def test_the_preview_frame_is_in_the_language_and_what_it_signs_is_not(home, tmp_path):
    from core.signing import marks, signed_action
    from tests.support.signing import A1, B2, add_operators, ingest

    add_operators(home, tmp_path, "alice")
    ingest(home, tmp_path, [A1, B2])
    shown = {}
    with Receiver(str(home.db)) as r:
        for lang in ("en", *LANGS):
            i18n.select(lang)
            shown[lang] = signed_action.preview(r, marks.MARK, {"frame_id": "B-2", "status": "dispatched"},
                                                "alice", "checked with the site")
    english = shown["en"]
    assert "reason: checked with the site" in english.lines
    assert shown["fr"].lines[-2] == "motif : checked with the site"  # the operator's reason stays as typed
    assert "cible : case:B-2 ; action : case.mark" in shown["fr"].lines
    for lang in LANGS:
        p = shown[lang]
        assert p.lines != english.lines
        assert (p.action, p.target, p.fingerprint, p.reason, p.payload, p.fields) == (
            english.action, english.target, english.fingerprint, english.reason, english.payload, english.fields)


def test_make_demo_in_french_shows_a_french_console_from_the_first_screen(monkeypatch):
    """``LANG=fr_FR.UTF-8 make demo`` (``ussd-console demo``): the console it opens, run headless."""
    from console.app import ConsoleApp
    from console.cli import main

    seen = {}

    def headless(app):
        async def look():
            async with app.run_test(size=(80, 24), notifications=True) as pilot:
                await press_and_settle(pilot)
                await until(lambda: notes_on_screen(app), what="the demo's first note")
                seen.update(first_screen(app), notes=notes_on_screen(app))
                app.exit()
        asyncio.run(look())

    monkeypatch.setattr(ConsoleApp, "run", headless)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    for name, value in {**NO_LOCALE, "LANG": "fr_FR.UTF-8"}.items():
        monkeypatch.setenv(name, value)
    assert main(["demo", "--pace", "0"]) == 0
    assert "1 Cas" in seen["tabs"] and "q Quitter" in seen["footer"], seen
    assert "| personnes " in seen["header"] and "balayage" in seen["header"], seen["header"]
    assert any("Une passerelle simulée va livrer" in note for note in seen["notes"]), seen["notes"]


REPORT_WORDS = {"en": ("<html lang=\"en\">", "<h1>Situation report</h1>", "People by need", "Health now"),
                "fr": ("<html lang=\"fr\">", "<h1>Rapport de situation</h1>", "Personnes par besoin", "État de santé"),
                "sw": ("<html lang=\"sw\">", "<h1>Ripoti ya hali</h1>", "Watu kwa hitaji", "Hali ya mfumo sasa"),
                "pt": ("<html lang=\"pt\">", "<h1>Relatório de situação</h1>", "Pessoas por necessidade", "Saúde agora"),
                "es": ("<html lang=\"es\">", "<h1>Informe de situación</h1>", "Personas por necesidad", "Salud ahora")}


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_the_situation_report_follows_the_language_and_its_json_does_not(sample_home, tmp_path, lang):
    from tests.support.cli import cli

    env = {**NO_LOCALE, "LANG": "C.UTF-8"}
    english = cli(sample_home, "report", "--since", "30d", "--to", str(tmp_path / "en.html"), "--json", env=env)
    r = cli(sample_home, "report", "--since", "30d", "--to", str(tmp_path / "r.html"), "--json", "--lang", lang,
            env=env)
    assert english.returncode == 0 and r.returncode == 0, r.stderr
    assert r.stdout.replace("r.html", "en.html") == english.stdout  # codes and field names, byte for byte
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert all(word in page for word in REPORT_WORDS[lang]), lang
    if lang != "en":
        assert "People by need" not in page and "Situation report" not in page


AUDIT_HELP = {"en": "the signed audit log", "fr": "le journal d'audit signé",
              "sw": "kumbukumbu ya ukaguzi iliyotiwa saini", "pt": "o registo de auditoria assinado",
              "es": "el registro de auditoría firmado"}


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_the_list_of_commands_says_what_each_does_in_the_language(lang):
    from tests.support.cli import run_cli

    r = run_cli("--lang", lang, "--help", env={**NO_LOCALE, "LANG": "C.UTF-8"})
    assert r.returncode == 0
    lines = {line.split()[0]: " ".join(line.split()[1:]) for line in r.stdout.splitlines()
             if line.startswith("    ") and line.split()}
    assert lines["audit"] == AUDIT_HELP[lang]


@run_async
async def test_a_retention_fault_is_marked_and_said_in_the_language(sample_home):
    """A policy typed into the store is set aside: the Retention screen marks it and says why in
    French, while ``status --json`` keeps the English (the fault's data)."""
    from textual.widgets import Static

    from tests.support.console_pilot import static_text

    with Receiver(str(sample_home.db)) as r:
        r.db.execute_sql("INSERT INTO retention_policy (retention_seconds, set_at, set_by, reason, is_exception) "
                         "VALUES (3600, 1714640000, 'alice', 'by hand', 0)")
        english = r.retention()["fault"]
    assert "is not applied" in english
    i18n.select("fr")
    app = fixed_app(sample_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await press_and_settle(pilot, "4")
        summary = " ".join(static_text(app.query_one("#retention-summary", Static)).split())
    assert "PANNE" in summary and "FAULT" not in summary
    assert "n'est pas appliquée" in summary and "is not applied" not in summary, summary


# What the quarantine's comparison and summary say in each language: the field labels, the need's
# name, the sightings line (the frames' own text stays as sent).
COMPARED = {
    "en": ("place in session", "checksum", "MED medical", "seen 3x, first", "via watch"),
    "fr": ("place dans la session", "somme de contrôle", "MED médical", "vu 3 fois, d'abord le", "par watch"),
    "sw": ("mahali katika kipindi", "jumla ya ukaguzi", "MED matibabu", "imeonekana mara 3, kwanza", "kupitia watch"),
    "pt": ("lugar na sessão", "soma de verificação", "MED médico", "visto 3 vezes, primeiro", "via watch"),
    "es": ("lugar en la sesión", "suma de verificación", "MED médico", "visto 3 veces, primero", "por watch"),
}


@pytest.mark.parametrize("lang", sorted(COMPARED))
def test_a_conflicts_comparison_and_sightings_are_in_the_language(lang):
    import io

    from rich.console import Console

    from console.panels.quarantine import compare, summary
    from core.store.records import Conflict

    item = Conflict(id=4, frame_id="kak01-1", case_key="kak01", frame_text="H1|1|Kakuma1|MED|9|86|#95",
                    first_frame_id="kak01-1", first_text="H1|1|Kakuma1|MED|3|86|#89", reason="same_frame_id_different_payload",
                    first_seen=1714640000.0, last_seen=1714643600.0, seen_count=3, source="watch", status="open",
                    resolved_at=None, resolved_by=None)
    i18n.select(lang)
    out = Console(width=120, record=True, file=io.StringIO())
    out.print(compare(item))
    out.print(summary(item))
    shown = " ".join(out.export_text().split())
    for words in COMPARED[lang]:
        assert words in shown, (words, shown)
    assert "H1|1|Kakuma1|MED|9|86|#95" in shown and "H1|1|Kakuma1|MED|3|86|#89" in shown
    if lang != "en":
        for english in ("place in session", "checksum", "medical", "seen 3x", "same id"):
            assert english not in shown, (english, shown)
    once = Console(width=120, record=True, file=io.StringIO())
    once.print(summary(item._replace(seen_count=1)))
    assert SEEN_ONCE[lang] in once.export_text(), once.export_text()


SEEN_ONCE = {"en": "seen 1x,", "fr": "vu 1 fois,", "sw": "imeonekana mara 1,", "pt": "visto 1 vez,", "es": "visto 1 vez,"}


@run_async
async def test_a_signed_resolve_says_its_audit_entry_in_the_language(sample_home):
    """Spanish, for its letters: the note is our words, shown as they are (not "auditor\\xeda")."""
    from console.dialogs.resolve_dialog import ResolveDialog
    from tests.support.console_pilot import fill_and_sign, open_dialog, with_operator
    from tests.support.signing import PASS

    with_operator(sample_home)
    i18n.select("es")
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        dialog = await open_dialog(app, pilot, "3", "a", ResolveDialog)
        await fill_and_sign(app, pilot, "site radioed the new count", PASS)
        await until(lambda: app.screen is not dialog)
        await until(lambda: any("entrada de auditoría n.º" in " ".join(note.split()) for note in notes_on_screen(app)),
                    what="the signed note in Spanish, its letters as they are")
        notes = notes_on_screen(app)
    assert not any("audit entry" in note or "\\x" in note for note in notes), notes


# The Activity screen's counts per path: headers, a gateway's posts and the files both paths reached.
PER_PATH = {
    "en": ("path frames applied dup conflict rejected files", "gateway office: 5 posts, 2 webhook retries",
           "files both paths reached: 2"),
    "fr": ("chemin trames appliquées doublons conflit rejetées fichiers", "passerelle office : 5 envois",
           "fichiers atteints par les deux chemins : 2"),
    "sw": ("njia fremu zimetumika rudufu mgongano zilizokataliwa faili", "lango office: machapisho 5",
           "faili zilizofikiwa na njia zote mbili: 2"),
    "pt": ("caminho tramas aplicadas duplicados conflito rejeitadas ficheiros", "gateway office: 5 envios",
           "ficheiros alcançados pelos dois caminhos: 2"),
    "es": ("vía tramas aplicadas duplicados conflicto rechazadas archivos", "pasarela office: 5 envíos",
           "archivos alcanzados por ambas vías: 2"),
}


@pytest.mark.parametrize("lang", sorted(PER_PATH))
def test_the_counts_per_path_are_in_the_language(lang):
    import io

    from rich.console import Console

    from console.panels.activity import per_path_table

    i18n.select(lang)
    per_source = {"watch": {"APPLIED": 3, "DUPLICATE": 2, "REJECT_BAD_CRC": 1}, "gw_office": {"APPLIED": 1}}
    gateways = {"office": {"posts": 5, "webhook_retries": 2, "refused": 1, "spooled": 0}}
    out = Console(width=120, record=True, file=io.StringIO())
    out.print(per_path_table(per_source, {"watch": 4}, 2, gateways))
    shown = " ".join(out.export_text().split())
    for words in PER_PATH[lang]:
        assert words in shown, (words, shown)


@pytest.mark.parametrize("lang, water", [("en", "water"), ("fr", "eau"), ("sw", "maji"), ("pt", "água"), ("es", "agua")])
def test_the_overviews_needs_are_named_in_the_language_and_an_unknown_one_as_stored(lang, water):
    from console.dialogs.overview_screen import _need_name

    i18n.select(lang)
    assert _need_name("WAT", "water").plain == water
    assert _need_name("XYZ", "[b]odd\x1b").plain == "[b]odd\\x1b"  # a need the frames made up: escaped, as sent


@run_async
async def test_a_rejected_line_is_shown_whole_in_the_language(sample_home):
    from console.dialogs.reject_dialog import RejectDialog
    from console.widgets.keyed_table import KeyedTable
    from tests.support.console_pilot import screen_words

    i18n.select("sw")
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "5")
        app.query_one("#rejects-table", KeyedTable).focus()
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, RejectDialog))
        await pilot.pause()
        words = screen_words(app)
        row = app.screen.row
    for said in ("Mstari uliokataliwa", "Mstari", "Funga (esc)", "kupitia"):
        assert said in words, (said, words)
    for english in ("Rejected line", "The line", "Close (esc)", " via "):
        assert english not in words, (english, words)
    assert row.frame_text in words  # the line itself as it came


@run_async
async def test_why_a_signature_was_refused_keeps_the_languages_letters(sample_home):
    """The dialog's own refusal is our words: Portuguese "é preciso um motivo", not "\\xe9 preciso"."""
    from textual.widgets import Static

    from console.dialogs.resolve_dialog import ResolveDialog
    from tests.support.console_pilot import open_dialog, static_text, with_operator

    with_operator(sample_home)
    i18n.select("pt")
    app = fixed_app(sample_home)
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_dialog(app, pilot, "3", "a", ResolveDialog)
        await until(lambda: dialog.query_one("#operator").value == "alice", what="the one operator chosen")
        await pilot.press("ctrl+s")
        result = dialog.query_one("#sign-result", Static)
        await until(lambda: "Não assinado" in static_text(result), what="the refusal in Portuguese")
        shown = " ".join(static_text(result).split())
    assert "é preciso um motivo" in shown and "\\x" not in shown, shown
