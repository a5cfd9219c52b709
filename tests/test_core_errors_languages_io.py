"""The errors made in core/ for gateways, backups, alerts, the inbox and reports come out in the
operator's language on the command line, the outside text in them escaped; the English line, the
exit code and ``--json`` are what they were, and a line logged for machines stays English."""

from __future__ import annotations

import logging

import pytest

from core import i18n
from core.rules.text import plain
from tests.support.cli import cli

LANGS = ("es", "fr", "pt", "sw")
NO_LOCALE = {"LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": "", "LANG": "C.UTF-8"}
CLI = "ussd-console: error: %(reason)s"
BACKUP = "backup: "


def tr(msgid: str, lang: str, **values) -> str:
    i18n.select(lang)
    try:
        return i18n._(msgid, **values) if values else i18n._(msgid)
    finally:
        i18n.select(i18n.SOURCE)


def _gateway(home, tmp_path):
    """A --listen that names no port: [gateways]' words (core/gateways/config.py)."""
    return (["watch", "--listen", "caf\u00e9"], CLI, "%(where)s: %(text)s is not HOST:PORT (a port is 0-65535)",
            {"where": "--listen", "text": "'caf\\xe9'"}, "n'est pas HÔTE:PORT", None, "caf\u00e9")


def _backup(home, tmp_path):
    """``backup verify`` of a file that is not there (core/backup/verify.py, exit 2)."""
    missing = tmp_path / "n\u00f6.tar.gz"
    return (["backup", "verify", str(missing)], BACKUP, "no backup file at %(file)s",
            {"file": plain(missing)}, "pas de fichier de sauvegarde", None, "n\u00f6")


def _damaged(home, tmp_path):
    """``backup verify`` of a file that is no backup (exit 1): its --json keeps the English why."""
    bad = tmp_path / "d\u00e9.tar.gz"
    bad.write_bytes(b"not gzip")
    return (["backup", "verify", str(bad)], BACKUP + "BAD: ",
            "the backup is cut short or damaged (the archive does not read: %(reason)s)",
            {"reason": "Not a gzipped file (b'no')"}, "tronquée ou endommagée", "json", None)


def _restore(home, tmp_path):
    """``restore`` with a backup key that is no fingerprint (core/backup/origin.py, exit 2)."""
    bad = tmp_path / "b.tar.gz"
    bad.write_bytes(b"not gzip")
    return (["restore", str(bad), "--home", str(tmp_path / "new"), "--backup-key", "z\u00e9"], BACKUP,
            "--backup-key is the backup key's fingerprint: %(least)s to 64 hex digits "
            "(`ussd-console backup key` prints it)", {"least": 12}, "l'empreinte de la clé", None, None)


def _alerts(home, tmp_path):
    """A bad [alerts] value, named by its file first (core/alerts/config.py)."""
    home.config.write_text('[alerts]\nurl = "ftp://ex\u00e9mple.org/x"\n', encoding="utf-8")
    return (["alerts", "test"], CLI,
            "%(where)s: alerts setting url must be an http:// or https:// address, not %(url)s",
            {"where": plain(f"{home.config} [alerts]"), "url": plain(repr("ftp://ex\u00e9mple.org/x"))},
            "doit être une adresse http://", None, "ex\u00e9mple")


def _report(home, tmp_path):
    """``report --since`` nonsense (core/report/period.py)."""
    return (["report", "--since", "nons\u00e9nse"], CLI,
            "%(text)s is not a period like 24h or 7d, nor a date like 2026-12-01 or 2026-12-01 07:00",
            {"text": "'nons\\xe9nse'"}, "n'est ni une période", None, "nons\u00e9nse")


def _ingest(home, tmp_path):
    """``ingest`` of a spreadsheet that is no archive (core/inbox/spreadsheets.py): path, then why."""
    sheet = tmp_path / "b\u00e9.xlsx"
    sheet.write_bytes(b"garbage")
    return (["ingest", str(sheet)], CLI, "not a spreadsheet (a broken or partial archive: %(error)s)",
            {"error": "BadZipFile"}, "pas un tableur", (plain(sheet),), "b\u00e9.xlsx")


CASES = {"gateway": _gateway, "backup": _backup, "damaged": _damaged, "restore": _restore, "alerts": _alerts,
         "report": _report, "ingest": _ingest}


def _line(lang: str, prefix: str, msgid: str, values: dict, before: str | None) -> str:
    if isinstance(before, tuple):  # the path the error is about, then the error, the language's way
        words = tr("%(path)s: %(reason)s", lang, path=before[0], reason=tr(msgid, lang, **values))
    else:
        words = (before if before not in (None, "json") else "") + tr(msgid, lang, **values)
    if prefix == CLI:
        return tr(CLI, lang, reason=words)
    head = tr(BACKUP, lang)
    if prefix != BACKUP:
        head += tr("BAD: %(reason)s", lang, reason="")
    return head + words


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("case", list(CASES))
def test_the_error_line_is_in_the_language_with_the_outside_text_escaped(home, tmp_path, case, lang):
    argv, prefix, msgid, values, french, extra, raw = CASES[case](home, tmp_path)
    english = cli(home, *argv, env=NO_LOCALE)
    told = cli(home, *argv, "--lang", lang, env=NO_LOCALE)
    en_line, line = english.stderr.strip().splitlines()[-1], told.stderr.strip().splitlines()[-1]
    assert en_line == _line("en", prefix, msgid, values, extra), english.stderr
    assert told.returncode == english.returncode != 0
    assert line == _line(lang, prefix, msgid, values, extra) and line != en_line, told.stderr
    assert raw is None or raw not in line  # outside text is shown escaped, never raw
    for value in values.values():
        assert str(value) in line  # the outside text as it was escaped in English, never raw
    if lang == "fr":
        assert french in line, line
    if extra == "json":
        assert cli(home, *argv, "--json", "--lang", lang, env=NO_LOCALE).stdout == \
            cli(home, *argv, "--json", env=NO_LOCALE).stdout != ""


def test_the_outside_text_of_a_marked_error_is_never_shown_raw(home, tmp_path):
    """The escaped name of the file, in French words: no é from outside reaches the terminal."""
    missing = tmp_path / "n\u00f6.tar.gz"
    line = cli(home, "backup", "verify", str(missing), "--lang", "fr", env=NO_LOCALE).stderr.strip()
    assert line.startswith("sauvegarde : pas de fichier de sauvegarde à ") and line.endswith("n\\xf6.tar.gz"), line


def test_a_scheduled_backup_that_fails_is_logged_and_faulted_in_english(home, caplog):
    """What watch logs and reports as a fault (status --json, alerts) is for machines: English."""
    from core.backup.config import BackupConfig
    from core.backup.schedule import BackupSchedule

    faults = []
    schedule = BackupSchedule(home, str(home.root / "no-store.db"), BackupConfig(every=3600.0),
                              fault=lambda key, words: faults.append(words), clear=lambda key: None)
    i18n.select("fr")
    with caplog.at_level(logging.WARNING, logger="ussd"):
        assert schedule.run_once() is False
    expected = f"no store at {home.root / 'no-store.db'}"
    assert faults == [f"backup failed: {expected}"]
    assert [r.getMessage() for r in caplog.records if "scheduled backup" in r.getMessage()] == \
        [f"scheduled backup failed: {expected}"]
