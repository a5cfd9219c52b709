"""Where the signed actions plug into the console.

Resolving a conflict and signing a retention exception need an operator's
signature (docs/rules.md#operators-and-signatures); that work ships its own dialogs. The console only knows
where to find them: a dialog passed to ``ConsoleApp(dialogs=...)`` wins, else
the class named here is imported if its module exists. Without one, the keys
stay visible but disabled, and nothing pretends to resolve anything.

Contract for a dialog class (a Textual ``Screen``):
- ``resolve``: ``ResolveDialog(item=<quarantine row dict>, action="keep_first" |
  "accept_correction", home=<Home>)``;
- ``exception``: ``ExceptionDialog(policy=<retention dict>, home=<Home>)``;
- ``mark``: ``MarkDialog(case=<case row dict with frame_id>, status=<status>, home=<Home>)``.
It dismisses with a true value when it changed the store, so the console
refreshes at once.
"""

from __future__ import annotations

import importlib
import importlib.util

DIALOGS = {
    "resolve": "console.dialogs.resolve_dialog:ResolveDialog",
    "exception": "console.dialogs.exception_dialog:ExceptionDialog",
    "mark": "console.dialogs.mark_dialog:MarkDialog",
}


def find_dialog(name: str):
    """The dialog class registered for ``name``, or None when that module is not installed."""
    module, _, attr = DIALOGS[name].partition(":")
    try:
        if importlib.util.find_spec(module) is None:
            return None
    except ModuleNotFoundError:
        return None
    return getattr(importlib.import_module(module), attr)
