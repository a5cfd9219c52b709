"""A new home's ``config.toml`` lists every setting, commented out with its default, and an old
home keeps its own. The template is held to the code: uncommented, it loads through every
section's loader, each setting it lists is one the loader knows (the loaders' own key lists), each
known setting is listed, and each value is the loader's default unless its line says the setting
is "not set by default" (then the default is none and the line gives an example)."""

from __future__ import annotations

import dataclasses
import re
import tomllib

import pytest

from console.actions import ACTIONS
from console.cli import main
from console.commands import serve
from core import config
from core.alerts.config import AlertsConfig, load_alerts_config
from core.backup import config as backup_config
from core.config_template import TEMPLATE
from core.gateways import config as gateways_config
from core.report import config as report_config
from core.home import Home

SETTING = re.compile(r"^# (?=\[|[a-z_]+ = )")
UNSET = "not set by default"


def uncommented(text: str) -> str:
    return "\n".join(SETTING.sub("", line) for line in text.splitlines())


def listed() -> dict[str, dict[str, str]]:
    """Each section's settings as the template lists them, with the words after each."""
    out: dict[str, dict[str, str]] = {"": {}}
    section = ""
    for line in TEMPLATE.splitlines():
        if not SETTING.match(line):
            continue
        body = line[2:]
        if body.startswith("["):
            section = body.split("]", 1)[0].strip("[")
            out.setdefault(section, {})
        else:
            key = body.split(" = ", 1)[0]
            out[section][key] = body.split("#", 1)[1] if "#" in body.split(" = ", 1)[1] else ""
    return out


def known_keys() -> dict[str, set[str]]:
    """Every setting each section's loader takes, from the loaders' own tables."""
    fields = lambda cls: {f.name for f in dataclasses.fields(cls) if f.repr}  # noqa: E731 - token is read, not set
    return {
        "": {"db"},
        "inbox": fields(config.InboxConfig),
        "console": fields(config.ConsoleConfig) - {"keys"},  # keys is the [console.keys] table
        "console.keys": {"quit"},  # one example; the action ids are docs/operator.md's table
        "signing": fields(config.SigningConfig),
        "logs": fields(config.LogConfig),
        "backup": set(backup_config.KNOWN),
        "report": set(report_config.KNOWN),
        "gateways": set(gateways_config.KNOWN),
        "alerts": fields(AlertsConfig),
        "serve": set(serve.SERVE_KEYS),
    }


@pytest.fixture
def full(tmp_path) -> Home:
    """A home whose config.toml is the template with every line uncommented."""
    home = Home(tmp_path / "home")
    home.root.mkdir()
    home.config.write_text(uncommented(TEMPLATE))
    (home.root / "alert-token").write_text("a-test-token\n")  # the example token_file is read at load
    return home


def test_the_template_lists_every_setting_every_loader_knows_and_no_other():
    sections = listed()
    assert {s: set(keys) for s, keys in sections.items()} == known_keys()


def test_uncommented_the_template_loads_with_every_default(full):
    path = full.config
    doc = tomllib.loads(path.read_text())
    unset = {(s, k) for s, keys in listed().items() for k, words in keys.items() if UNSET in words}
    empty = full.root.parent / "empty.toml"
    empty.write_text("")

    def same_defaults(section, loaded, default, mapping=None):
        for f in dataclasses.fields(default):
            if not f.repr:
                continue  # read from another setting (the alert token from token_file), never set
            key = (mapping or {}).get(f.name, f.name)
            if (section, key) in unset:
                assert getattr(default, f.name) in (None, (), {}, 0, "127.0.0.1"), (section, key)
                continue
            assert getattr(loaded, f.name) == getattr(default, f.name), (section, key)

    same_defaults("inbox", config.load_inbox_config(path), config.InboxConfig())
    console = config.load_console_config(path)
    assert console.unlock_minutes == config.ConsoleConfig().unlock_minutes
    quit_action = next(a for a in ACTIONS if a.id == "quit")
    assert doc["console"]["keys"] == {"quit": quit_action.keys}  # the example is quit's own default key
    same_defaults("signing", config.load_signing_config(path), config.SigningConfig())
    same_defaults("logs", config.load_log_config(path), config.LogConfig())
    same_defaults("backup", backup_config.load_backup_config(path), backup_config.load_backup_config(empty))
    same_defaults("report", report_config.load_report_config(path), report_config.load_report_config(empty))
    assert report_config.load_report_config(path).every == 86400.0
    gateways = gateways_config.load_gateways_config(path)
    assert gateways_config.load_gateways_config(empty) is None  # not set: watch does not listen
    same_defaults("gateways", gateways, gateways_config.GatewaysConfig(),
                  mapping={"host": "listen", "port": "listen"})
    assert (gateways.host, gateways.port) == ("127.0.0.1", 8580)
    alerts, default = load_alerts_config(path), load_alerts_config(empty)
    same_defaults("alerts", alerts, default)
    assert default.targets == {} and set(alerts.targets) == {"command", "url"}
    assert doc["serve"] == {"max_sessions": serve.DEFAULT_MAX_SESSIONS}
    assert config.store_target(full) == str(full.db)  # db's default: receiver.db in the home
    assert all(UNSET in listed()[s][k] for s, k in unset)


def test_a_new_home_gets_the_template_and_an_old_home_keeps_its_config(tmp_path, capsys):
    (tmp_path / "f.txt").write_text("kak01-1 H1|1|Kakuma1|MED|3|86|#89\n")
    new = tmp_path / "new"
    assert main(["--home", str(new), "ingest", str(tmp_path / "f.txt")]) == 0
    assert (new / "config.toml").read_text() == TEMPLATE
    assert (new / "config.toml").stat().st_mode & 0o777 == 0o600
    assert "[backup]" in TEMPLATE and re.search(r"^# every = ", TEMPLATE, re.M)  # the line the guides name
    made = tmp_path / "made-empty"
    made.mkdir()
    assert main(["--home", str(made), "ingest", str(tmp_path / "f.txt")]) == 0
    assert (made / "config.toml").read_text() == TEMPLATE  # an empty folder made for it is a new home
    old = tmp_path / "old"
    old.mkdir()
    (old / "config.toml").write_text("[inbox]\nsweep_interval = 9.0\n")
    (old / "receiver.db").touch(exist_ok=True)
    assert main(["--home", str(old), "ingest", str(tmp_path / "f.txt")]) == 0
    assert (old / "config.toml").read_text() == "[inbox]\nsweep_interval = 9.0\n"
    bare = tmp_path / "bare"  # an old home without a config file stays without one
    assert main(["--home", str(bare), "ingest", str(tmp_path / "f.txt")]) == 0
    (bare / "config.toml").unlink()
    assert main(["--home", str(bare), "ingest", str(tmp_path / "f.txt")]) == 0
    assert not (bare / "config.toml").exists()
    capsys.readouterr()
