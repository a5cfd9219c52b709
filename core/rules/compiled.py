"""The ingest's two inner loops compiled, when the build could compile them (core/rules/_fastpath.c).

Parsing and deciding the common frames are the ingest's largest share of Python time; in C they
cost a tenth. The C loops are copies of ``parse_all``'s and ``decide_all``'s, which stay the
definition and run wherever the extension is missing (no C compiler at install time): each hands
anything but the common case back to the Python code. ``loops`` is None without it.
"""

from __future__ import annotations

try:
    from . import _fastpath as loops
except ImportError:  # built without a compiler: the Python loops run
    loops = None
