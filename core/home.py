"""Where things live under the home folder, and how the home is chosen."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ENV_HOME = "USSD_CONSOLE_HOME"
DEFAULT_HOME = "data"
DB_NAME = "receiver.db"
# One log per home: the headless watcher and the console write the same file, in one format.
LOG_NAME = "receiver.log"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def sync_folder(folder: Path) -> None:
    """A name renamed or linked into a folder survives a power cut only once the folder is synced."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def resolve(cls, given: str | os.PathLike | None = None) -> "Home":
        """``--home`` wins, then ``$USSD_CONSOLE_HOME``, then ``./data``."""
        chosen = given or os.environ.get(ENV_HOME) or DEFAULT_HOME
        return cls(Path(chosen).expanduser().resolve())

    @property
    def db(self) -> Path:
        return self.root / DB_NAME

    @property
    def inbox(self) -> Path:
        return self.root / "inbox"

    @property
    def processed(self) -> Path:
        return self.root / "processed"

    @property
    def rejected(self) -> Path:
        return self.root / "rejected"

    @property
    def operators(self) -> Path:
        return self.root / "operators"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def log_file(self) -> Path:
        return self.logs / LOG_NAME

    @property
    def exports(self) -> Path:
        return self.root / "exports"

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    def ensure(self) -> "Home":
        self.root.mkdir(parents=True, exist_ok=True)
        return self
