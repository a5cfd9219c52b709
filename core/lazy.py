"""Names a package exports but imports only on first use (PEP 562).

A package whose modules pull in heavy libraries (peewee, an HTTP client, the inbox service's
threads) exports its names this way, so a caller that needs one name pays for that one module.
"""

from __future__ import annotations

import importlib
import sys
from typing import Callable


def lazy_names(package: str, names: dict[str, str]) -> Callable[[str], object]:
    """The package's ``__getattr__``: each name is looked up in its module once, then kept."""

    def __getattr__(name: str):
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
