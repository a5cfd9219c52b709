"""A folder every xdist worker of a run shares, for what is built once per run."""

from __future__ import annotations

from pathlib import Path


def shared_folder(tmp_path_factory) -> Path:
    """The run's base folder: the parent of the workers' own (``popen-gwN``), or the base itself
    in the controller or a run without workers."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if base.name.startswith("popen-gw") else base
