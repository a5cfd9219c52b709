"""What every command needs: the home, a receiver on its store, and the output mode."""

from __future__ import annotations

from dataclasses import dataclass, field

from core import Receiver
from core.home import Home

from .render import make_console


@dataclass
class Context:
    home: Home
    json: bool = False
    _receiver: Receiver | None = field(default=None, repr=False)

    @property
    def receiver(self) -> Receiver:
        if self._receiver is None:
            self.home.ensure()
            self._receiver = Receiver(str(self.home.db))
        return self._receiver

    @property
    def out(self):
        return make_console()

    def close(self) -> None:
        if self._receiver is not None:
            self._receiver.close()
            self._receiver = None
