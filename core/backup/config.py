"""``[backup]`` in config.toml: where scheduled backups go, how often, how many are kept, and
the age recipients they are encrypted to. A bad value names its key when the program starts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.config import checked, folder_setting, read_section
from core.i18n import N_, MarkedError

KNOWN = ("dir", "every", "keep", "recipients")


class BackupConfigError(MarkedError, ValueError):
    """A ``[backup]`` value that does not read; the message names its key, for the operator."""


@dataclass(frozen=True)
class BackupConfig:
    dir: str | None = None  # None: <home>/backups
    every: float | None = None  # None: watch makes no scheduled backups
    keep: int = 14
    recipients: tuple[str, ...] = ()

    def folder(self, home) -> Path:
        """A relative ``dir`` is under the home, whatever folder the command was started in (``watch``
        under its unit starts in ``/``): every command finds the same backups."""
        if not self.dir:
            return Path(home.root) / "backups"
        path = Path(self.dir).expanduser()
        return path if path.is_absolute() else Path(home.root) / path


def _recipients(value, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BackupConfigError(N_("%(where)s: backup setting recipients must be a list of age public keys "
                                   '("age1...")'), where=where)
    from pyrage import x25519

    for text in value:
        if not text.startswith("age1"):
            raise BackupConfigError(N_("%(where)s: backup setting recipients: %(text)s is not an age public key"
                                       " (age1...)"), where=where, text=repr(text[:20]))
        try:
            x25519.Recipient.from_str(text)
        except Exception:  # noqa: BLE001 - pyrage's RecipientError, any spelling of it
            raise BackupConfigError(N_("%(where)s: backup setting recipients: %(text)s... is not a valid age "
                                       "public key"), where=where, text=repr(text[:20])) \
                from None
    return tuple(value)


def load_backup_config(config_path: Path) -> BackupConfig:
    table, where = read_section(config_path, "backup", KNOWN)
    folder = folder_setting(table, where, "backup")
    checked(table, where, "backup", ("every", "keep"))
    return BackupConfig(dir=folder, every=float(table["every"]) if "every" in table else None,
                        keep=int(table.get("keep", 14)), recipients=_recipients(table.get("recipients", []), where))
