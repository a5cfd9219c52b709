"""What every command needs: the home, a receiver on its store, and the output mode."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from core import Receiver
from core.config import store_target
from core.home import Home
from core.store.backend import is_postgres_url
from core.store.database import describe_target

from .errors import CommandError
from core.i18n import _
from core.rules.text import escape_text
from .render import make_console


@dataclass
class Context:
    home: Home
    json: bool = False
    db: str | None = None  # --db; else $USSD_CONSOLE_DB; else <home>/receiver.db
    # A command that takes frames in or signs may create its home; one that only reads never
    # does, so a mistyped --home is an error rather than an empty store that looks like data loss.
    writes: bool = False
    _receiver: Receiver | None = field(default=None, repr=False)

    def open_home(self) -> Home:
        """The home, created (with a one-line notice) by a writing command, else required to exist."""
        root = self.home.root
        if root.is_dir():
            if not self.writes:
                self._check_store()
            else:
                self.home.ensure()  # a folder made empty for it is a new home: it gets its config.toml
            return self.home
        if root.exists():
            raise CommandError.told(_("the home %(home)s is not a folder"), home=root)
        if not self.writes and self._explicit_store():
            self._check_store()
            return self.home  # --db names the store; a home for config and keys is not needed to read it
        if not self.writes:
            raise CommandError.told(
                _("no home at %(home)s: check --home or $USSD_CONSOLE_HOME; a command that takes frames in "
                  "creates it (e.g. `ussd-console --home %(home)s ingest FILE`, or `watch`)"), home=root)
        self.home.ensure()
        print(_("ussd-console: created a new home at %(home)s", home=escape_text(str(root), 300)), file=sys.stderr)
        return self.home

    def _explicit_store(self) -> bool:
        return bool(self.db or os.environ.get("USSD_CONSOLE_DB"))

    def _check_store(self) -> None:
        """A reading command never creates a SQLite store named by --db that is not there."""
        store_target = self.store_target
        if self._explicit_store() and not is_postgres_url(store_target) and store_target != ":memory:" \
                and not os.path.exists(store_target):
            raise CommandError.told(_("no store at %(target)s: check --db or $USSD_CONSOLE_DB (a relative path is "
                                      "under the home)"), target=store_target)

    @property
    def receiver(self) -> Receiver:
        if self._receiver is None:
            self.open_home()
            self._receiver = Receiver(self.store_target, create=self.writes)
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
