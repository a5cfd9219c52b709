"""Helpers for the backup tests: a home's backup key as the CLI prints it, and a manifest signed
again with a home's own key (a test of the checks behind the signature needs a changed manifest
the home itself signed, which someone holding only the backup cannot make)."""

from __future__ import annotations

import json

from core.backup import archive, origin
from core.home import Home
from tests.support.cli import run_cli
from tests.support.helpers import ROOT


def backup_key(home: Home) -> str:
    """The home's backup key fingerprint, from `backup key --json` (made when missing)."""
    proc = run_cli("--home", str(home.root), "--json", "backup", "key", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["fingerprint"]


def resign(members: dict, home: Home, manifest: dict | None = None) -> None:
    """Sign ``manifest`` (default: the one in ``members``) with ``home``'s own backup key, in place."""
    man = json.loads(members[archive.MANIFEST]) if manifest is None else manifest
    man = {k: v for k, v in man.items() if k not in ("signature", "backup_key")}
    members[archive.MANIFEST] = json.dumps(origin.sign(man, origin.load_key(home))).encode()
