"""``<home>/config.toml`` [inbox]: documented defaults, flags override, bad values stop the start."""

from __future__ import annotations

import pytest

from console.cli import main
from core.config import InboxConfig, load_inbox_config


def test_defaults_without_a_file(tmp_path):
    config = load_inbox_config(tmp_path / "config.toml")
    assert config == InboxConfig()
    assert (config.sweep_interval, config.settle_time, config.keep_originals, config.evict_every) == (3.0, 1.0, False, 3600.0)
    assert config.observer and config.sweep


def test_every_delivery_path_hands_the_ingest_one_bound():
    """The inbox's default batch, ``ingest``'s slices and the gateway committer's group are each one
    ingest call (one transaction) of at most ``HANDOVER_FRAMES``, the bound measured for memory."""
    from console.commands.ingest import BATCH
    from core.gateways.committer import GROUP_FRAMES
    from core.store.ledger import HANDOVER_FRAMES

    assert InboxConfig().batch_lines == BATCH == GROUP_FRAMES == HANDOVER_FRAMES == 100_000


def test_file_values_then_flags_override(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[inbox]\nsweep_interval = 5\nkeep_originals = true\nsettle_time = 0.5\n")
    config = load_inbox_config(path, {"sweep_interval": 1.5, "settle_time": None})
    assert (config.sweep_interval, config.keep_originals, config.settle_time) == (1.5, True, 0.5)


@pytest.mark.parametrize("body, words", [
    ("[inbox]\nsweep_intervall = 3\n", ["unknown setting", "sweep_intervall"]),
    ("[inbox]\nsettle_time = 'soon'\n", ["settle_time", "must be a number"]),
    ("[inbox]\nsettle_time = true\n", ["settle_time", "must be a number"]),
    ("[inbox]\nkeep_originals = 1\n", ["keep_originals", "true or false"]),
    ("[inbox]\nsweep_interval = 0\n", ["sweep_interval", "out of range"]),
    ("[inbox]\nmax_file_bytes = 1.5\n", ["max_file_bytes", "whole number"]),
    ("inbox = 3\n", ["[inbox]"]),
    ("[inbox\n", ["not valid TOML"]),
])
def test_bad_values_are_a_clear_error_naming_the_key_and_file(tmp_path, body, words):
    path = tmp_path / "config.toml"
    path.write_text(body)
    with pytest.raises(ValueError) as info:
        load_inbox_config(path)
    message = str(info.value)
    assert str(path) in message
    for word in words:
        assert word in message


def test_a_bad_flag_is_named_too(tmp_path):
    with pytest.raises(ValueError, match="command line: .*settle_time"):
        load_inbox_config(tmp_path / "config.toml", {"settle_time": -1.0})


def test_watch_refuses_to_start_on_a_bad_setting_with_one_line(home, capsys):
    home.config.write_text("[inbox]\nsweep_interval = 'often'\n")
    assert main(["watch", "--home", str(home.root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sweep_interval" in err[0] and "Traceback" not in err[0]
    assert not home.inbox.exists()  # nothing started
