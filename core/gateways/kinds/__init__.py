"""Every gateway kind, one module each: each module declares ``KIND``, one ``Kind``
(``core.gateways.adapters``), with its docs page ``docs/gateways/<name>.md`` and its recorded
requests in ``tests/vectors/gateways/<name>/``. Adding a kind is adding those three; nothing
else names a kind.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..adapters import Kind


def _declared() -> dict[str, Kind]:
    found: dict[str, Kind] = {}
    for module in sorted(info.name for info in pkgutil.iter_modules(__path__)):
        kind = importlib.import_module(f"{__name__}.{module}").KIND
        if kind.name.replace("-", "_") != module or kind.name in found:
            raise ImportError(f"gateway kind module {module} declares the kind {kind.name!r}")
        found[kind.name] = kind
    return found


KINDS: dict[str, Kind] = _declared()  # by name, in name order


def names() -> tuple[str, ...]:
    return tuple(KINDS)
