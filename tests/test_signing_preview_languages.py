"""The lines each signed action writes about itself in its preview, in the operator's language:
every action's preview in French, Swahili, Portuguese and Spanish says the same decision in other
words while what it signs (the preview's ``fields``) is the English one's, byte for byte; an
entry signed from the command line in French is the one signed in English, and ``audit verify``
says the same of it in every language."""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from core import Receiver, i18n
from core.gateways import signed as gateway_signed
from core.signing import actions, backup_record, marks, operator_add, operator_changes, signed_action
from core.signing.keys import public_raw
from tests.support.cli import run_cli
from tests.support.signing import A1, A1_FIX, B2, add_operators, cli, ingest, passfile, quarantine_id, sign, snapshot

LANGS = ("es", "fr", "pt", "sw")
NO_LOCALE = {"LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": "", "LANG": "C.UTF-8"}
REASON = "checked with the site"

# The first words of a few previews in each language, as the catalogs have them.
FIRST = {
    "keep": {"en": "resolve conflict #1 (same frame id, different values): keep first",
             "fr": "résoudre le conflit n° 1 (même id de trame, autres valeurs) : garder la première",
             "sw": "tatua mgongano #1 (kitambulisho cha fremu kilekile, thamani tofauti): baki na la kwanza",
             "pt": "resolver o conflito n.º 1 (mesmo id de trama, outros valores): manter a primeira",
             "es": "resolver el conflicto n.º 1 (mismo id de trama, otros valores): conservar la primera"},
    "mark": {"en": "mark case B-2 (Dadaab WAT, 12 people, pri 70) dispatched (now open, version 1)",
             "fr": "marquer le cas B-2 (Dadaab WAT, 12 personnes, prio 70) envoyé (actuellement ouvert, version 1)",
             "sw": "weka kesi B-2 (Dadaab WAT, watu 12, kipaumbele 70) imetumwa (sasa wazi, toleo 1)",
             "pt": "marcar o caso B-2 (Dadaab WAT, 12 pessoas, prio 70) enviado (agora aberto, versão 1)",
             "es": "marcar el caso B-2 (Dadaab WAT, 12 personas, prio 70) enviado (ahora abierto, versión 1)"},
    "retention": {"en": "change retention from 30 days to 20 days",
                  "fr": "changer la conservation de 30 jours à 20 jours",
                  "sw": "badilisha muda wa kuhifadhi kutoka siku 30 hadi siku 20",
                  "pt": "mudar a retenção de 30 dias para 20 dias",
                  "es": "cambiar la retención de 30 días a 20 días"},
}


@pytest.fixture
def board(home, tmp_path):
    """alice and bob (every role), carol (resolver only), a conflict on A-1, a gateway to retire."""
    add_operators(home, tmp_path, "alice", "bob")
    assert cli(home, "operator", "add", "carol", "--passphrase-file", passfile(tmp_path, "carol"), "--role",
               "resolver", "--operator", "alice", "--operator-passphrase-file", passfile(tmp_path, "alice")) == 0
    ingest(home, tmp_path, [A1, B2])
    ingest(home, tmp_path, [A1_FIX], name="fix.txt")
    assert sign(home, tmp_path, "gateway", "add", "field1", "--kind", "generic") == 0
    return home


def _cases(home, tmp_path) -> list[tuple]:
    """(action, its plan's arguments) for every action a home in this state can plan."""
    qid = quarantine_id(home, "A-1", A1_FIX[1])
    gateway_args, _token = gateway_signed.prepare_add("field2", "generic", secret_file=None,
                                                      public_url="https://example.org", reply="END")
    new_key = Ed25519PrivateKey.generate()
    return [
        ("keep", actions.KEEP, {"quarantine_id": qid}),
        ("accept", actions.ACCEPT, {"quarantine_id": qid}),
        ("mark", marks.MARK, {"frame_id": "B-2", "status": "dispatched"}),
        ("retention", actions.RETENTION, {"days": 20}),
        ("grant", operator_changes.GRANT, {"name": "carol", "role": "dispatcher"}),
        ("revoke", operator_changes.REVOKE, {"name": "bob", "role": "dispatcher"}),
        ("retire", operator_changes.RETIRE, {"name": "bob"}),
        ("add", operator_add.ADD, {"name": "dave", "key": new_key, "roles": ["resolver"]}),
        ("gateway add", gateway_signed.ADD, gateway_args),
        ("gateway retire", gateway_signed.RETIRE, {"name": "field1"}),
        ("backup key", backup_record.RECORD_KEY, {"public_key": public_raw(new_key).hex(), "home_id": None}),
    ]


def test_every_previews_lines_are_in_the_language_and_what_it_signs_is_not(board, tmp_path):
    with Receiver(str(board.db)) as r:
        for name, action, args in _cases(board, tmp_path):
            shown = {}
            for lang in ("en", *LANGS):
                i18n.select(lang)
                shown[lang] = signed_action.preview(r, action, args, "alice", REASON)
            english = shown["en"]
            for lang in LANGS:
                p = shown[lang]
                what = len(p.lines) - 4  # the action's own lines, above the frame's four
                assert what >= 1 and all(a != b for a, b in zip(p.lines[:what], english.lines[:what])), (name, lang)
                assert (p.action, p.target, p.fingerprint, p.reason, p.payload, p.fields) == (
                    english.action, english.target, english.fingerprint, english.reason, english.payload,
                    english.fields), (name, lang)
            if name in FIRST:
                assert {lang: p.lines[0] for lang, p in shown.items()} == FIRST[name]


@pytest.mark.parametrize("lang", LANGS)
def test_the_lines_of_actions_planned_elsewhere_come_in_the_language(lang):
    from core.alerts.resume import RESUME

    adopt = {"operators": [{"name": "alice", "fingerprint": "ab" * 32, "retired_at": None},
                           {"name": "bob", "fingerprint": "cd" * 32, "retired_at": 5.0}]}
    resume = {"restored_from": "b-1.tar.age", "targets": {"command": None, "url": "https://example.org/***"}}
    english = operator_changes.ADOPT.lines(None, adopt) + RESUME.lines(None, resume)
    i18n.select(lang)
    shown = operator_changes.ADOPT.lines(None, adopt) + RESUME.lines(None, resume)
    assert len(shown) == len(english) and all(a != b for a, b in zip(shown, english))
    assert all("alice" in line for line in (shown[1], english[1])) and "b-1.tar.age" in shown[3]


@pytest.fixture
def held(home, tmp_path):
    add_operators(home, tmp_path, "alice", "bob")
    home.config.write_text('[signing]\ncountersign = ["retention"]\n', encoding="utf-8")
    done = run_cli("--home", str(home.root), "--json", "retention", "set", "40", "--operator", "alice",
                   "--passphrase-file", passfile(tmp_path, "alice"), "--reason", REASON, env=NO_LOCALE)
    assert done.returncode == 0, done.stderr
    return home, json.loads(done.stdout.splitlines()[-1])["pending"]


APPROVE_FIRST = {"en": "approve request {rid} by alice: change retention from 30 days to 40 days",
                 "fr": "approuver la demande {rid} de alice : changer la conservation de 30 jours à 40 jours",
                 "sw": "idhinisha ombi {rid} la alice: badilisha muda wa kuhifadhi kutoka siku 30 hadi siku 40",
                 "pt": "aprovar o pedido {rid} de alice: mudar a retenção de 30 dias para 40 dias",
                 "es": "aprobar la solicitud {rid} de alice: cambiar la retención de 30 días a 40 días"}


@pytest.mark.parametrize("lang", LANGS)
def test_a_decision_on_a_held_request_is_previewed_in_the_language(held, tmp_path, lang):
    from console.signed_actions import APPROVE, REJECT

    home, rid = held
    shown = {}
    with Receiver(str(home.db)) as r:
        for each in ("en", lang):
            i18n.select(each)
            shown[each] = [signed_action.preview(r, action, {"request_id": rid}, "bob", REASON)
                           for action in (APPROVE, REJECT)]
    (approve, reject), (en_approve, en_reject) = shown[lang], shown["en"]
    assert en_approve.lines[0] == APPROVE_FIRST["en"].format(rid=rid)
    assert approve.lines[0] == APPROVE_FIRST[lang].format(rid=rid)
    assert reject.lines[0] != en_reject.lines[0] and reject.lines[1] != en_reject.lines[1]
    assert REASON in reject.lines[1]  # the requester's reason stays as typed
    assert (approve.fields, reject.fields) == (en_approve.fields, en_reject.fields)
    i18n.select("en")
    waiting = run_cli("--home", str(home.root), "--json", "pending", "--lang", lang, env=NO_LOCALE)
    english = run_cli("--home", str(home.root), "--json", "pending", env=NO_LOCALE)
    assert waiting.returncode == 0 and waiting.stdout == english.stdout  # a request's "what" stays English data
    assert "change retention from 30 days to 40 days" in english.stdout


def _signed_in(home, tmp_path, lang: str) -> list[tuple]:
    """A home where alice resolves a conflict, marks a case and sets the retention with ``--lang``;
    what those entries say, as signed."""
    add_operators(home, tmp_path, "alice")
    ingest(home, tmp_path, [A1, B2])
    ingest(home, tmp_path, [A1_FIX], name="fix.txt")
    qid = str(quarantine_id(home, "A-1", A1_FIX[1]))
    for argv in (("resolve", qid, "--accept-correction"), ("case", "mark", "A-1", "served"),
                 ("retention", "set", "20")):
        assert sign(home, tmp_path, *argv, "--lang", lang) == 0, argv
    return [(e["action"], e["target"], e["reason"], e["payload"]) for e in snapshot(home)["audit"][1:]]


def test_entries_signed_in_french_are_the_english_ones_and_verify_alike(home, tmp_path):
    from core.home import Home

    french = _signed_in(home, tmp_path, "fr")
    english_home = Home(tmp_path / "english").ensure()
    (tmp_path / "en").mkdir()
    assert _signed_in(english_home, tmp_path / "en", "en") == french
    assert sign(home, tmp_path, "gateway", "add", "field1", "--kind", "generic", "--lang", "fr") == 0
    assert sign(home, tmp_path, "gateway", "retire", "field1", "--lang", "sw") == 0
    assert sign(home, tmp_path, "backup", "key", "record", "--lang", "pt") == 0
    verdicts = {lang: run_cli("--home", str(home.root), "audit", "verify", "--json", "--lang", lang, env=NO_LOCALE)
                for lang in ("en", *LANGS)}
    assert {(r.returncode, r.stdout) for r in verdicts.values()} == {(0, verdicts["en"].stdout)}
    assert json.loads(verdicts["en"].stdout.splitlines()[-1])["ok"] is True


@pytest.mark.parametrize("lang", LANGS)
def test_the_command_lines_preview_is_in_the_language(home, tmp_path, lang):
    add_operators(home, tmp_path, "alice")
    ingest(home, tmp_path, [A1, B2])
    typed = "vérifié sur place"
    done = run_cli("--home", str(home.root), "--lang", lang, "case", "mark", "B-2", "dispatched", "--operator",
                   "alice", "--passphrase-file", passfile(tmp_path, "alice"), "--reason", typed, env=NO_LOCALE)
    assert done.returncode == 0, done.stderr
    assert FIRST["mark"][lang] in " ".join(done.stdout.split())  # the language's letters as they are
    assert FIRST["mark"]["en"] not in done.stdout
    assert "v\\xe9rifi\\xe9 sur place" in done.stdout
    assert "vérifié" not in done.stdout  # outside text is escaped, as everywhere it is shown
