"""What every command needs: the home, a receiver on its store, and the output mode."""

from __future__ import annotations

from dataclasses import dataclass, field

from core import Receiver
from core.config import store_target
from core.home import Home
from core.store.database import describe_target

from .render import make_console


@dataclass
class Context:
    home: Home
    json: bool = False
    db: str | None = None  # --db; else $USSD_CONSOLE_DB; else <home>/receiver.db
    _receiver: Receiver | None = field(default=None, repr=False)

    @property
    def receiver(self) -> Receiver:
        if self._receiver is None:
            self.home.ensure()
            self._receiver = Receiver(self.store_target)
        return self._receiver

    @property
    def store_target(self) -> str:
        return store_target(self.home, self.db)

    @property
    def store_label(self) -> str:
        return describe_target(self.store_target)

    @property
    def out(self):
        return make_console()

    def close(self) -> None:
        if self._receiver is not None:
            self._receiver.close()
            self._receiver = None
