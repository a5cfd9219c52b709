"""The commands' own words in each shipped language (rejects, quarantine, pending, evictions, files,
the signing flow, ...): their listings and lines translated and at 80 columns with no word cut,
their ``--help`` in the language, and their ``--json`` byte for byte the English one."""

from __future__ import annotations

import re

import pytest

from core import i18n
from tests.support.cli import cli, run_cli
from tests.support.sample_template import built_once, home_copy
from tests.support.shared import shared_folder
from tests.support.signing import A1, A1_FIX, B2, C1, add_operators, ingest, passfile, sign

LANGS = ("es", "fr", "pt", "sw")
NO_LOCALE = {"LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": "", "LANG": "C.UTF-8"}
USAGE = {"fr": "utilisation : ", "sw": "matumizi: ", "pt": "utilização: ", "es": "uso: "}
TABLE = set("┃│┏┗┡└")  # a table's lines; a line printed whole for copying (soft-wrapped) may be longer
RULES = re.compile(r"[\s│┃─━┏┓┗┛┡┩└┘┌┐├┤┬┴┼╇╈╋╭╮╯╰]+")


def _build_busy(home, scratch) -> None:
    """alice and bob (admins), a conflict in quarantine, a reject, an inbox file, an eviction run, and a retention
    change alice asked for that waits for a second admin."""
    home.ensure()
    add_operators(home, scratch, "alice", "bob")
    ingest(home, scratch, [A1, B2, A1_FIX, ("Z-9", "not a frame at all")])
    home.inbox.mkdir(exist_ok=True)
    (home.inbox / "site.txt").write_text(f"{C1[0]} {C1[1]}\n", encoding="utf-8")
    assert cli(home, "ingest", str(home.inbox / "site.txt"), env=NO_LOCALE).returncode == 0  # a file in the inbox
    assert cli(home, "evict", env=NO_LOCALE).returncode == 0
    home.config.write_text('[signing]\ncountersign = ["retention"]\n', encoding="utf-8")
    asked = cli(home, "retention", "set", "40", "--operator", "alice", "--reason", "long trips",
                "--passphrase-file", passfile(scratch, "alice"), env=NO_LOCALE)
    assert asked.returncode == 0, asked.stderr


# What the busy home follows from: a change to any builds it again (tests/support/sample_template.py).
BUSY_MADE_FROM = ("core", "console", "tests/support/signing.py", "tests/support/cli.py", "tests/test_cli_languages.py")


@pytest.fixture
def busy(home, tmp_path, tmp_path_factory):
    """The busy home (``_build_busy``), built once per run and copied for each test: building it signed
    four changes through the command line, a second and a half a test."""
    return home_copy(built_once(shared_folder(tmp_path_factory), "cli-languages-busy", BUSY_MADE_FROM, _build_busy),
                     home.root)


def said(home, lang: str, *argv: str) -> str:
    """What ``argv`` prints in ``lang`` (its ``--json`` checked to be the English one first)."""
    english = cli(home, *argv, "--json", env=NO_LOCALE)
    assert english.returncode == 0 and english.stdout, english.stderr
    assert cli(home, *argv, "--json", "--lang", lang, env=NO_LOCALE).stdout == english.stdout
    r = cli(home, *argv, "--lang", lang, env=NO_LOCALE)
    assert r.returncode == 0, r.stderr
    assert all(len(line) <= 80 for line in r.stdout.splitlines() if set(line) & TABLE), r.stdout
    return r.stdout


def whole(out: str, *headers: str) -> None:
    """Every word of each header is in ``out`` as a whole word: at 80 columns a column header may go
    over two lines between its words, never inside one."""
    words = set(RULES.split(out))
    for header in headers:
        for word in header.split():
            assert word in words, (word, out)


def helps(lang: str, *command: str, words: str) -> None:
    r = run_cli("--lang", lang, *command, "--help", env=NO_LOCALE)
    assert r.returncode == 0 and r.stdout.startswith(USAGE[lang] + "ussd-console " + " ".join(command)), r.stdout
    assert words in " ".join(r.stdout.split()), r.stdout


def tr(msgid: str, lang: str, **values) -> str:
    i18n.select(lang)
    try:
        return i18n._(msgid, **values)
    finally:
        i18n.select(i18n.SOURCE)


REJECTS = {"fr": "la ligne, et ce qui n'allait pas", "sw": "mstari, na kilichokosewa",
           "pt": "a linha, e o que estava errado", "es": "la línea, y lo que estaba mal"}
QUARANTINE = {"fr": ("Quarantaine (ouverts)", "registre :", "résoudre avec :"),
              "sw": ("Karantini (wazi)", "daftari:", "tatua kwa:"),
              "pt": ("Quarentena (abertos)", "registo:", "resolver com:"),
              "es": ("Cuarentena (abiertos)", "registro:", "resolver con:")}


@pytest.mark.parametrize("lang", LANGS)
def test_rejects_and_quarantine_speak_the_language(busy, lang):
    out = said(busy, lang, "rejects")
    whole(out, REJECTS[lang], tr("file:line, when", lang))
    assert "Z-9" in out
    out = said(busy, lang, "quarantine")
    title, ledger, hint = QUARANTINE[lang]
    assert title in out and hint in out and "ussd-console resolve ID --keep-first" in " ".join(out.split())
    assert ledger in out and "A-1" in out
    whole(out, tr("what differs", lang), tr("ledger now / new version", lang))
    whole(said(busy, lang, "quarantine", "--all"), tr("status", lang))
    helps(lang, "quarantine", words=tr("resolved ones too", lang))
    helps(lang, "rejects", words=tr("show at most N rows (default %(limit)s)", lang, limit=50))


def test_the_quarantines_versions_line_up_in_every_language(busy):
    """The version the ledger holds and the newcomer start in the same column, whatever the labels' length."""
    for lang in ("en", *LANGS):
        lines = cli(busy, "quarantine", "--lang", lang, env=NO_LOCALE).stdout.splitlines()
        old = next(line for line in lines if "H1|1|Kakuma1|MED|3|" in line)
        new = next(line for line in lines if "H1|1|Kakuma1|MED|7|" in line)
        assert old.index("H1|") == new.index("H1|"), (lang, old, new)
    english = cli(busy, "quarantine", env=NO_LOCALE).stdout
    assert "ledger: H1|1|Kakuma1|MED|3|" in english and "new:    H1|1|Kakuma1|MED|7|" in english


PENDING = {"fr": "En attente d'un second admin", "sw": "Yanasubiri msimamizi wa pili",
           "pt": "À espera de um segundo admin", "es": "Esperando a un segundo admin"}


@pytest.mark.parametrize("lang", LANGS)
def test_pending_and_the_eviction_log_speak_the_language(busy, lang):
    out = said(busy, lang, "pending")
    assert PENDING[lang] in out and "`ussd-console approve ID`" in " ".join(out.split())
    whole(out, tr("expires", lang))
    out = said(busy, lang, "evictions")
    assert tr("Eviction log", lang) in out
    whole(out, tr("started by", lang), tr("cutoff", lang))
    helps(lang, "approve", words=tr("who signs", lang))
    helps(lang, "evict", words=tr("home folder (default $%(variable)s or ./%(folder)s)", lang,
                                  variable="USSD_CONSOLE_HOME", folder="data"))


EVICTED = {"fr": "0 id de trame vu pour la première fois il y a plus de 30 jours oublié",
           "sw": "vitambulisho 0 vya fremu vilivyoonekana kwanza zaidi ya siku 30 iliyopita vimesahauliwa",
           "pt": "0 id de trama visto pela primeira vez há mais de 30 dias esquecido",
           "es": "0 ids de trama vistos por primera vez hace más de 30 días olvidados"}
FILES = {"fr": "Fichiers de la boîte de réception : 1 affiché", "sw": "Faili za kikasha: 1 imeonyeshwa",
         "pt": "Ficheiros da caixa de entrada: 1 mostrado", "es": "Archivos de la bandeja de entrada: 1 mostrado"}


@pytest.mark.parametrize("lang", LANGS)
def test_evict_and_files_speak_the_language(busy, lang):
    evicted = cli(busy, "evict", "--lang", lang, env=NO_LOCALE)
    assert evicted.returncode == 0 and EVICTED[lang] in " ".join(evicted.stdout.split())
    out = said(busy, lang, "files")
    assert out.startswith(FILES[lang])
    helps(lang, "files", words=tr("only files in this state", lang))


SIGNING = {"fr": ("Sur le point de signer :", "entrée d'audit signée n° "),
           "sw": ("Karibu kutia saini:", "ingizo la ukaguzi lililotiwa saini #"),
           "pt": ("Prestes a assinar:", "entrada de auditoria assinada n.º "),
           "es": ("A punto de firmar:", "entrada de auditoría firmada n.º ")}


@pytest.mark.parametrize("lang", LANGS)
def test_the_signing_flow_speaks_the_language_and_signs_the_same(busy, tmp_path, lang):
    from tests.support.signing import snapshot

    [request] = [line for line in cli(busy, "pending", "--json", env=NO_LOCALE).stdout.splitlines()]
    rid = request.split('"id": ')[1].split(",")[0].strip('"')
    r = cli(busy, "reject", rid, "--operator", "bob", "--reason", "not now", "--passphrase-file",
            passfile(tmp_path, "bob"), "--lang", lang, env=NO_LOCALE)
    assert r.returncode == 0, r.stderr
    about, entry = SIGNING[lang]
    assert r.stdout.startswith(about) and entry in r.stdout
    last = snapshot(busy)["audit"][-1]
    assert (last["operator"], last["reason"]) == ("bob", "not now")  # what is signed is the operator's own words
    missing = cli(busy, "resolve", "1", "--keep-first", "--operator", "alice", "--lang", lang, env=NO_LOCALE)
    assert missing.returncode == 2 and "--reason TEXT" in missing.stderr
    assert tr("give the reason with --reason TEXT (required for every signed action)", lang) in missing.stderr


OPERATORS = {"fr": ("Opérateurs", "tous les rôles", "actif"), "sw": ("Waendeshaji", "majukumu yote", "hai"),
             "pt": ("Operadores", "todas as funções", "ativo"), "es": ("Operadores", "todos los roles", "activo")}
AUDIT = {"fr": ("Journal d'audit (", "journal d'audit OK : "), "sw": ("Kumbukumbu ya ukaguzi (", "kumbukumbu ya ukaguzi SAWA: "),
         "pt": ("Registo de auditoria (", "registo de auditoria OK: "), "es": ("Registro de auditoría (", "registro de auditoría OK: ")}


@pytest.mark.parametrize("lang", LANGS)
def test_operators_retention_and_the_audit_log_speak_the_language(busy, lang):
    title, every, active = OPERATORS[lang]
    out = said(busy, lang, "operator", "list")
    assert out.startswith(title) and every in out and active in out
    whole(out, tr("key fingerprint", lang), tr("roles", lang))
    out = said(busy, lang, "retention", "show")
    assert tr("Retention history", lang) in out and tr("retention: %(policy)s", lang, policy="")[:5] in out
    whole(out, tr("set at", lang), tr("set by", lang))
    shown, verified = AUDIT[lang]
    out = said(busy, lang, "audit", "show")
    assert out.startswith(shown) and tr("head %(hash)s", lang, hash="")[:4] in out
    whole(out, tr("action and target", lang))
    out = said(busy, lang, "audit", "verify")
    assert out.startswith(verified)
    assert cli(busy, "audit", "checkpoint", "--lang", lang, env=NO_LOCALE).stdout.splitlines()[1].startswith("# ")
    helps(lang, "operator", "add", words=tr("read the new operator's passphrase from the first line of PATH", lang))
    helps(lang, "resolve", words=tr("dismiss the new version; the ledger stays", lang))
    helps(lang, "audit", "verify", words=tr("a head hash written down earlier; it must still be in the log", lang))


@pytest.mark.parametrize("lang", LANGS)
def test_a_new_operator_is_told_in_the_language_and_a_refusal_keeps_its_accents_and_escapes_the_name(busy, tmp_path,
                                                                                                     lang):
    r = cli(busy, "operator", "add", "carol", "--passphrase-file", passfile(tmp_path, "carol"), "--operator", "alice",
            "--operator-passphrase-file", passfile(tmp_path, "alice"), "--role", "resolver", "--lang", lang,
            env=NO_LOCALE)
    assert r.returncode == 0, r.stderr
    assert tr("operator %(name)s added; key fingerprint %(fingerprint)s; roles: %(roles)s", lang, name="carol",
              fingerprint="", roles="")[:8] in r.stdout
    r = cli(busy, "operator", "add", "dan", "--operator", "alice", "--lang", lang, env=NO_LOCALE)
    assert r.returncode == 2 and "--role ROLE" in r.stderr and "\\x" not in r.stderr, r.stderr


HOSTILE = "d\u00e9p\u00f4t[bold red]x\x1b[31m\x07"  # accents, Rich markup, an escape sequence and a bell, from outside
DIRECTORY = {"fr": "n'est pas un fichier ordinaire", "sw": "si faili ya kawaida", "pt": "não é um ficheiro normal",
             "es": "no es un archivo normal"}
NOT_SENT = {"fr": "rien n'est envoyé", "sw": "hakuna kinachotumwa", "pt": "nada é enviado", "es": "no se envía nada"}


@pytest.mark.parametrize("lang", LANGS)
def test_a_told_error_keeps_our_accents_and_escapes_the_outside_text_in_it(home, tmp_path, lang):
    from core.alerts.pause import write_marker

    folder = tmp_path / HOSTILE
    folder.mkdir()
    r = cli(home, "ingest", str(folder), "--lang", lang, env=NO_LOCALE)
    escaped = "d\\xe9p\\xf4t[bold red]x\\x1b[31m\\x07"
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1].endswith(
        tr("%(path)s is not a regular file", lang, path=f"{tmp_path}/{escaped}")), r.stderr
    assert DIRECTORY[lang] in r.stderr and "\x1b" not in r.stderr and "\x07" not in r.stderr and "dép" not in r.stderr
    ingest(home, tmp_path, [A1])  # a store, for `alerts test` to find the home paused
    write_marker(home.root, HOSTILE, 0.0)  # the backup a restore came from: a name from outside
    paused = cli(home, "alerts", "test", "--lang", lang, env=NO_LOCALE)
    assert paused.returncode == 2 and NOT_SENT[lang] in paused.stderr, paused.stderr
    assert escaped in paused.stderr and "\x1b" not in paused.stderr, paused.stderr


GATEWAYS = {"fr": ("Passerelles", "acceptés : envois pris"), "sw": ("Malango", "yaliyokubaliwa: machapisho"),
            "pt": ("Gateways", "aceites: envios recebidos"), "es": ("Pasarelas", "aceptados: envíos recibidos")}


@pytest.mark.parametrize("lang", LANGS)
def test_gateways_and_alerts_speak_the_language(busy, tmp_path, lang):
    added = cli(busy, "gateway", "add", "office", "--kind", "africastalking", "--operator", "alice", "--reason", "short",
                "--passphrase-file", passfile(tmp_path, "alice"), "--lang", lang, env=NO_LOCALE)
    assert added.returncode == 0, added.stderr
    assert tr("paste this into the gateway's callback URL; it is shown only now:", lang) in " ".join(added.stdout.split())
    title, counted = GATEWAYS[lang]
    out = said(busy, lang, "gateway", "list")
    assert counted in out and f"\n{title}" in out
    whole(out, tr("webhook retries", lang), tr("last post", lang), tr("added by", lang))
    assert tr("Gateways (posts)", lang) in cli(busy, "status", "--lang", lang, env=NO_LOCALE).stdout
    listed = said(busy, lang, "alerts")  # the conflict's alert, waiting for a target
    assert listed.startswith(tr("Alerts, newest first", lang))
    whole(listed, tr("summary / last error", lang), tr("target", lang), tr("(none yet)", lang))
    untargeted = cli(busy, "alerts", "test", "--lang", lang, env=NO_LOCALE)
    assert untargeted.returncode == 2 and "[alerts]" in untargeted.stderr and "\\x" not in untargeted.stderr
    helps(lang, "gateway", "add", words=tr("1-13 lower-case letters, digits or '_'", lang))
    helps(lang, "alerts", words=tr("only deliveries in this state", lang))


BACKUP = {"fr": ("sauvegarde écrite : ", "sauvegarde OK : "), "sw": ("nakala ya akiba imeandikwa: ", "nakala ya akiba SAWA: "),
          "pt": ("cópia de segurança escrita: ", "cópia de segurança OK: "),
          "es": ("copia de seguridad escrita: ", "copia de seguridad OK: ")}


@pytest.mark.parametrize("lang", LANGS)
def test_a_backup_and_its_check_speak_the_language(busy, tmp_path, lang):
    import json

    made = cli(busy, "backup", "--to", str(tmp_path / "b"), "--json", env=NO_LOCALE)
    assert made.returncode == 0, made.stderr
    file = json.loads(made.stdout)["file"]
    written, verified = BACKUP[lang]
    r = cli(busy, "backup", "--to", str(tmp_path / "c"), "--lang", lang, env=NO_LOCALE)
    assert r.returncode == 0 and r.stdout.startswith(written), r.stdout
    assert tr("note: no [backup] recipients in config.toml: this backup is NOT encrypted; keep it safe", lang)[:12] \
        in r.stderr
    english = cli(busy, "backup", "verify", file, "--json", env=NO_LOCALE)
    assert english.returncode == 0
    assert cli(busy, "backup", "verify", file, "--json", "--lang", lang, env=NO_LOCALE).stdout == english.stdout
    r = cli(busy, "backup", "verify", file, "--lang", lang, env=NO_LOCALE)
    assert r.returncode == 0 and r.stdout.startswith(verified), r.stdout
    assert tr("checked: %(what)s", lang, what="")[:6] in r.stdout
    key = cli(busy, "backup", "key", "--lang", lang, env=NO_LOCALE)
    assert key.returncode == 0 and tr("backup key %(fingerprint)s (%(short)s); %(state)s", lang, fingerprint="",
                                      short="", state="")[:8] in key.stdout
    helps(lang, "backup", "verify", words=tr("the age identity file, for an encrypted backup", lang))


def test_what_a_backup_check_covered_and_did_not_is_said_in_the_language_and_kept_in_english(busy, tmp_path):
    """The "checked" list and the notes of what was not: the operator's language on the screen, the
    English in --json (what scripts and the manifest keep)."""
    import json

    made = cli(busy, "backup", "--to", str(tmp_path / "b"), "--json", env=NO_LOCALE)
    assert made.returncode == 0, made.stderr
    file = json.loads(made.stdout)["file"]
    # Recording the backup key signs an entry: the log grows past the backup, and a checkpoint taken
    # now (which carries the key) is ahead of it.
    assert sign(busy, tmp_path, "backup", "key", "record") == 0
    line = [x for x in cli(busy, "audit", "checkpoint", env=NO_LOCALE).stdout.splitlines()
            if x.startswith("ussd-checkpoint")][0]
    older = ("the audit chain against the checkpoint given: the backup holds %(count)s entries, the checkpoint "
               "recorded %(recorded)s (the backup is older); run %(command)s once it is restored")
    checked = cli(busy, "backup", "verify", file, "--checkpoint", line, "--json", env=NO_LOCALE)
    assert checked.returncode == 0, checked.stderr
    english = json.loads(checked.stdout)
    assert english["checked"][0] == "every member's SHA-256"
    [note] = english["not_checked"]
    assert note.startswith("the audit chain against the checkpoint given: the backup holds ")
    for lang in LANGS:
        r = cli(busy, "backup", "verify", file, "--checkpoint", line, "--lang", lang, env=NO_LOCALE)
        assert r.returncode == 0, r.stderr
        assert tr("every member's SHA-256", lang) in r.stdout
        assert tr("SQLite's integrity and foreign key checks, the audit chain against the checkpoint", lang) in r.stdout
        before, after = tr(older, lang, count="\0", recorded="\0", command="\0").split("\0")[:2]
        assert before in r.stderr and after in r.stderr, r.stderr
        assert "SHA-256" in r.stdout and "member" not in r.stdout and "the audit chain" not in r.stderr


def test_why_a_tampered_log_does_not_verify_is_said_in_the_language_and_kept_in_english(busy):
    """The verdict on an edited entry and on a removed one: each reason in the operator's language
    where `audit verify` prints it, the English in --json (scripts, a backup's manifest)."""
    import json
    import sqlite3

    def verdicts() -> tuple[str, dict[str, str]]:
        english = json.loads(cli(busy, "audit", "verify", "--json", env=NO_LOCALE).stdout)["why"]
        return english, {lang: cli(busy, "audit", "verify", "--lang", lang, env=NO_LOCALE).stdout for lang in LANGS}

    con = sqlite3.connect(busy.db, isolation_level=None)
    try:
        con.execute("DROP TRIGGER audit_log_no_update")  # as an attacker would, to edit the log at all
        con.execute("DROP TRIGGER audit_log_no_delete")
        (count,) = con.execute("SELECT COUNT(*) FROM audit_log").fetchone()
        [(first_id, reason)] = con.execute("SELECT id, reason FROM audit_log ORDER BY id LIMIT 1").fetchall()
        con.execute("UPDATE audit_log SET reason = ? WHERE id = ?", (reason + " (and more)", first_id))
        after_edit = verdicts()
        con.execute("UPDATE audit_log SET reason = ? WHERE id = ?", (reason, first_id))
        assert cli(busy, "audit", "verify", env=NO_LOCALE).returncode == 0  # put back, it verifies again
        con.execute("DELETE FROM audit_log WHERE id = (SELECT MAX(id) FROM audit_log)")
    finally:
        con.close()
    after_cut = verdicts()
    for (words, values), (english, said_in) in [
            (("edited: the entry's content no longer matches what was signed", {}), after_edit),
            (("removed: entry #%(pos)s is missing (the log head records %(recorded)s entries)",
              {"pos": count, "recorded": count}), after_cut)]:
        assert english == words % values
        for lang, out in said_in.items():
            assert tr(words, lang, **values) in out and english not in out, out


@pytest.mark.parametrize("lang", LANGS)
def test_a_file_with_no_text_column_is_refused_in_the_language_with_its_columns(home, tmp_path, lang):
    """The columns a refused file has are the file's (masked); the sentence around them, "(blank)"
    and "and N more" are the language's. --json keeps the English line."""
    from core.rules.columns import LOOKED_FOR, NO_TEXT_COLUMN

    home.ensure()
    wide = tmp_path / "wide.csv"
    wide.write_text("id,phone,,c4,c5,c6,c7,c8,c9,c10\n1,+254712345678,,,,,,,,\n", encoding="utf-8")
    r = cli(home, "ingest", str(wide), "--lang", lang, env=NO_LOCALE)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    i18n.select(lang)
    try:
        found = i18n._("%(names)s and %(n)s more", names=f"id, phone, {i18n._('(blank)')}, c4, c5, c6, c7, c8", n=2)
        words = i18n._(NO_TEXT_COLUMN, found=found, names=LOOKED_FOR)
    finally:
        i18n.select(i18n.SOURCE)
    assert words in r.stderr and "and 2 more" not in r.stderr and "+254712345678" not in r.stderr, r.stderr
    english = cli(home, "ingest", str(wide), "--json", env=NO_LOCALE)
    assert "id, phone, (blank), c4, c5, c6, c7, c8 and 2 more" in english.stdout + english.stderr


WEAK_REFUSED = {"password1": "This is a very common password.", "Alice2024alice": "the operator's own name",
                "short": "the passphrase must be at least %(n)s characters"}


@pytest.mark.parametrize("lang", LANGS)
def test_a_weak_passphrase_is_refused_in_the_language(home, tmp_path, lang):
    """The refusal of a weak new passphrase (the estimator's words, the home words it is made of, the
    length floor) and the advice after it, in the operator's language; nothing is created."""
    from core.signing.keys import key_path
    from core.signing.passphrases import ADVICE

    home.ensure()
    for weak, words in WEAK_REFUSED.items():
        r = cli(home, "operator", "add", "alice", "--role", "admin", "--passphrase-file",
                passfile(tmp_path, "alice", weak), "--lang", lang, env=NO_LOCALE)
        assert r.returncode == 2 and r.stdout == "", r.stderr
        assert tr(words, lang, n=8) in r.stderr and tr(ADVICE, lang) in r.stderr, r.stderr
        assert words not in r.stderr and ADVICE not in r.stderr
        assert not key_path(home, "alice").exists()


INGEST = {"fr": ("Verdicts", "registre : "), "sw": ("Maamuzi", "daftari: "), "pt": ("Veredictos", "registo: "),
          "es": ("Veredictos", "registro: ")}


EXPORTED = {"fr": "cases : 2 lignes écrites dans ", "sw": "cases: mistari 2 imeandikwa kwenye ",
            "pt": "cases: 2 linhas escritas em ", "es": "cases: 2 filas escritas en "}


def test_a_file_over_the_size_limit_is_told_with_the_languages_numbers(home, tmp_path):
    """The sizes in the refusal are numbers written as the operator's language writes them."""
    home.config.write_text("[inbox]\nmax_file_bytes = 4096\n", encoding="utf-8")
    big = tmp_path / "big.txt"
    big.write_text("x" * 5000, encoding="utf-8")
    english = cli(home, "ingest", str(big), env=NO_LOCALE)
    assert english.returncode != 0 and "(5,000 > 4,096 bytes)" in english.stderr, english.stderr
    french = cli(home, "ingest", str(big), "--lang", "fr", env=NO_LOCALE)
    assert french.returncode != 0 and "5\u202f000" in french.stderr and "4\u202f096" in french.stderr, french.stderr
    assert "Traceback" not in french.stderr + english.stderr


@pytest.mark.parametrize("lang", LANGS)
def test_ingest_frame_and_export_speak_the_language(home, tmp_path, lang):
    from core.home import Home
    from tests.support.helpers import frame

    path = tmp_path / "day.txt"
    path.write_text(f"{A1[0]} {A1[1]}\n{B2[0]} {B2[1]}\n", encoding="utf-8")
    english = cli(Home(tmp_path / "english").ensure(), "ingest", str(path), "--json", env=NO_LOCALE)
    assert english.returncode == 0 and english.stdout.count("\n") == 2
    assert cli(home, "ingest", str(path), "--json", "--lang", lang, env=NO_LOCALE).stdout == english.stdout
    out = cli(home, "ingest", str(path), "--lang", lang, env=NO_LOCALE)
    verdicts, ledger = INGEST[lang]
    assert out.returncode == 0 and out.stdout.startswith(verdicts) and ledger in out.stdout, out.stdout
    assert all(len(line) <= 80 for line in out.stdout.splitlines())
    missing = cli(home, "ingest", str(tmp_path / "n\u00e9ant.txt"), "--lang", lang, env=NO_LOCALE)
    assert missing.returncode == 2 and "n\\xe9ant.txt" in missing.stderr  # the path escaped, our words as they are
    assert tr("cannot read %(path)s: %(reason)s", lang, path="", reason="").split()[0] in missing.stderr
    body = frame(1, "Lodwar1", "WAT", 15, 88).rsplit("|", 1)[0]
    assert cli(home, "frame", body, "--json", "--lang", lang, env=NO_LOCALE).stdout == \
        cli(home, "frame", body, "--json", env=NO_LOCALE).stdout
    bad = cli(home, "frame", "H1|x", "--lang", lang, env=NO_LOCALE)
    assert bad.returncode == 2 and tr("not a frame body: %(reason)s", lang, reason="").strip() in bad.stderr
    written = cli(home, "export", "cases", "--out", str(tmp_path / "c.csv"), "--lang", lang, env=NO_LOCALE)
    assert written.returncode == 0
    assert written.stdout.startswith(EXPORTED[lang])
    ranked = cli(home, "ranking", "--csv", str(tmp_path / "r.csv"), "--lang", lang, env=NO_LOCALE)
    assert ranked.returncode == 0 and "r.csv" in ranked.stdout
    helps(lang, "ingest", words=tr("frame files: 'frame_id frame' lines, gateway CSV exports or JSON lines", lang))
    helps(lang, "frame", words=tr("H1|place|site|need|people|priority, e.g. %(example)s", lang,
                                  example="H1|1|Lodwar1|WAT|15|88"))
    helps(lang, "export", words=tr("replace an existing file", lang))
    helps(lang, "ranking", words=tr("served and closed cases too", lang))


@pytest.mark.parametrize("lang", LANGS)
def test_the_servers_commands_and_the_demo_have_their_help_in_the_language(lang):
    helps(lang, "watch", words=tr("seconds between sweeps (default 3)", lang))
    helps(lang, "serve", words=tr("address to listen on (default 127.0.0.1)", lang))
    helps(lang, "console", words=tr("show the store without taking files from the inbox (another process does)", lang))
    helps(lang, "demo", words=tr("keep the throwaway home and say where it is", lang))
    helps(lang, "report", words=tr("one site's cases only", lang))
    r = run_cli("--lang", lang, "--help", env=NO_LOCALE)
    listed = {line.split()[0]: " ".join(line.split()[1:]) for line in r.stdout.splitlines()
              if line.startswith("    ") and line.split()}
    assert listed["report"] == tr("the situation report of a period (HTML or PDF)", lang)
    assert listed["export"].startswith(tr("write a view as CSV or .xlsx (%(views)s)", lang, views="")[:10])


@pytest.mark.parametrize("lang", LANGS)
def test_a_usage_mistake_of_serve_is_told_in_the_language(home, lang):
    r = cli(home, "serve", "--port", "70000", "--lang", lang, env=NO_LOCALE)
    assert r.returncode == 2 and "--port 70000" in r.stderr
    assert r.stderr.startswith(tr("ussd-console: error: %(reason)s", lang, reason="")), r.stderr
    assert tr("--port %(port)s is not a port (1 to 65535, or 0 for any free one)", lang, port=70000) in r.stderr


def test_the_demo_printed_speaks_the_language(monkeypatch):
    r = run_cli("demo", "--print", "--lang", "fr", env=NO_LOCALE)
    assert r.returncode == 0, r.stderr
    assert "Ordre d'envoi" in r.stdout and "chacun appliqué une fois" in " ".join(r.stdout.split())


class _Served:
    """``GuardedServer`` as ``serve`` builds it, kept instead of served: the session command it was given."""

    made: list[str] = []

    def __init__(self, command: str, **kw):
        self.made.append(command)
        self.public_url = "http://127.0.0.1:1"

    def serve(self) -> None:
        return None


@pytest.mark.parametrize("way", ["config", "flag", "environment"])
def test_the_browser_sessions_speak_the_language_serve_was_started_in(home, monkeypatch, way):
    import shlex

    from console.cli import chosen_language
    from console.web import guard

    monkeypatch.setattr(guard, "GuardedServer", _Served)
    _Served.made.clear()
    ingest(home, home.root.parent, [A1])  # a store to serve
    argv, env = ["serve", "--port", "0"], dict(NO_LOCALE)
    if way == "config":
        home.config.write_text('[console]\nlanguage = "sw"\n', encoding="utf-8")
    elif way == "flag":
        argv += ["--lang", "sw"]
    else:
        env["LANG"] = "sw_KE.UTF-8"
    r = cli(home, *argv, env=env)
    assert r.returncode == 0, r.stderr
    [command] = _Served.made
    session = shlex.split(command)[1:]  # after "exec": python -m console.cli --home ... console --no-inbox
    assert session[3:7] == ["--home", str(home.root), "--lang", "sw"] and session[-2:] == ["console", "--no-inbox"]
    assert chosen_language(session[3:]) == "sw"  # what the session's own command line chooses, whatever its environment


@pytest.mark.parametrize("lang", LANGS)
def test_every_commands_help_comes_out_whole_in_the_language(lang):
    """argparse fills each option's help with ``%``: a translated help with a stray one would crash ``--help``."""
    from tests.support.cli import every_parser

    paths = [path for path, _parser in every_parser() if path and path[0] != "help"]
    assert ("operator", "add") in paths and ("backup", "verify") in paths
    for path in paths:
        r = run_cli("--lang", lang, *path, "--help", env=NO_LOCALE)
        assert r.returncode == 0 and r.stdout.startswith(USAGE[lang]), (path, r.stderr)
        assert "Traceback" not in r.stderr and "%(" not in r.stdout, (path, r.stdout)


CASE = {"fr": ("cas A-1 : ouvert", "maintenant : Kakuma1 MED, 3 personnes"),
        "sw": ("kesi A-1: wazi", "sasa: Kakuma1 MED, watu 3"),
        "pt": ("caso A-1: aberto", "agora: Kakuma1 MED, 3 pessoas"),
        "es": ("caso A-1: abierto", "ahora: Kakuma1 MED, 3 personas")}


@pytest.mark.parametrize("lang", LANGS)
def test_a_cases_history_speaks_the_language(busy, lang):
    out = said(busy, lang, "case", "show", "A-1")
    head, now = CASE[lang]
    assert out.startswith(head) and now in out, out
    whole(out, tr("Open conflicts", lang), tr("new version", lang), tr("none (open since it arrived)", lang))
    helps(lang, "case", "show", words=tr("the frame id of any version of the case", lang))


NEGATIVE = {"fr": "-1 est négatif", "sw": "-1 ni hasi", "pt": "-1 é negativo", "es": "-1 es negativo"}


@pytest.mark.parametrize("lang", LANGS)
def test_a_bad_row_count_or_date_is_a_usage_error_in_the_language(home, lang):
    r = cli(home, "rejects", "--limit", "-1", "--lang", lang, env=NO_LOCALE)
    assert r.returncode == 2 and r.stderr.startswith(USAGE[lang]) and NEGATIVE[lang] in r.stderr, r.stderr
    r = cli(home, "cases", "--since", "yesterday", "--lang", lang, env=NO_LOCALE)
    assert r.returncode == 2 and "'yesterday'" in r.stderr and "2025-05-08 14:30" in r.stderr
    assert tr("%(value)s is not a date like %(date)s or %(time)s", lang, value="", date="", time="").split()[0] \
        in r.stderr


def test_the_browsers_login_and_full_pages_speak_serves_language():
    from console.web.guard import full_words, login_words

    assert "That is not the login token." in login_words("http://127.0.0.1:8566", wrong=True)
    i18n.select("fr")
    page = login_words("http://127.0.0.1:8566", wrong=True)
    assert "Ce n&#x27;est pas le jeton de connexion." in page or "Ce n'est pas le jeton de connexion." in page
    assert "<code>ussd-console serve</code>" in page and ">Se connecter</button>" in page
    assert "au plus 3 sessions de console" in full_words(3) and "<code>--max-sessions</code>" in full_words(3)


@pytest.mark.parametrize("lang", LANGS)
def test_a_new_home_and_a_refused_export_or_report_file_are_told_in_the_language(tmp_path, lang):
    """The first command on a new home says so in the language; a missing home, a file already
    there, a missing folder and a symlink are refused in it, for an export and the report alike."""
    from core.home import Home

    new = tmp_path / "new-home"
    path = tmp_path / "day.txt"
    path.write_text(f"{A1[0]} {A1[1]}\n", encoding="utf-8")
    made = run_cli("--home", str(new), "ingest", str(path), "--lang", lang, env=NO_LOCALE)
    assert made.returncode == 0
    assert tr("ussd-console: created a new home at %(home)s", lang, home=new) in made.stderr, made.stderr
    assert "created a new home" not in made.stderr
    gone = run_cli("--home", str(tmp_path / "nowhere"), "status", "--lang", lang, env=NO_LOCALE)
    assert gone.returncode != 0 and "Traceback" not in gone.stderr
    assert tr("no home at %(home)s: check --home or $USSD_CONSOLE_HOME; a command that takes frames in creates it "
              "(e.g. `ussd-console --home %(home)s ingest FILE`, or `watch`)", lang,
              home=tmp_path / "nowhere").split(":")[0] in gone.stderr, gone.stderr
    home = Home(new)
    no_store = cli(home, "--db", "none.db", "status", "--lang", lang, env=NO_LOCALE)
    assert no_store.returncode != 0 and not (new / "none.db").exists()
    assert tr("no store at %(target)s: check --db or $USSD_CONSOLE_DB (a relative path is under the home)", lang,
              target=new / "none.db") in no_store.stderr, no_store.stderr
    taken = tmp_path / "taken.csv"
    taken.write_text("mine\n", encoding="utf-8")
    (tmp_path / "link.html").symlink_to(taken)
    for command in (["export", "cases", "--out"], ["report", "--to"]):
        target = taken if command[0] == "export" else tmp_path / "taken.html"
        target.write_text("mine\n", encoding="utf-8")
        refused = cli(home, *command, str(target), "--lang", lang, env=NO_LOCALE)
        assert refused.returncode != 0 and "Traceback" not in refused.stderr
        assert tr("%(path)s already exists; use --force to replace it", lang, path=target) in refused.stderr, \
            refused.stderr
        assert target.read_text(encoding="utf-8") == "mine\n"  # nothing written over it
        nowhere = cli(home, *command, str(tmp_path / "no-such" / "x.csv"), "--lang", lang, env=NO_LOCALE)
        assert tr("the folder %(path)s does not exist; create it first", lang,
                  path=tmp_path / "no-such") in nowhere.stderr, nowhere.stderr
        linked = cli(home, *command, str(tmp_path / "link.html"), "--lang", lang, env=NO_LOCALE)
        assert tr("%(path)s is a symlink; refusing to write through it (remove it or name another file)", lang,
                  path=tmp_path / "link.html") in linked.stderr, linked.stderr
    assert taken.read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize("lang", LANGS)
def test_an_unknown_language_is_refused_in_the_one_the_environment_names(home, lang):
    """``--lang xx`` or a home set to an unknown one: the run falls back to the environment's
    language, so the refusal is said in it (English where it names none we ship)."""
    home.ensure()
    env = {**NO_LOCALE, "LANG": f"{lang}.UTF-8"}
    asked = cli(home, "status", "--lang", "klingon", env=env)
    assert asked.returncode == 2 and "Traceback" not in asked.stderr
    assert tr("unknown language %(given)s; the shipped languages are %(shipped)s", lang, given="'klingon'",
              shipped="en, es, fr, pt, sw") in asked.stderr, asked.stderr
    assert "unknown language" not in asked.stderr
    home.config.write_text('[console]\nlanguage = 5\n', encoding="utf-8")
    typed = cli(home, "status", env=env)
    assert typed.returncode == 2
    assert tr('%(config)s [console] language must be a language code in quotes, e.g. "fr", not %(given)s', lang,
              config=home.config, given="5") in typed.stderr, typed.stderr
