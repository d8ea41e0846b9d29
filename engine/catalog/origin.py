"""Where a check comes from, apart from what it is.

A check's ``kind`` says what it is (``code``, ``model``, ``builtin``); its origin says
where it comes from: scorebox's own (``builtin``: a judged built-in is ``kind`` ``model``),
a tenant's push (``pushed``), or the check generator's, pushed as such (``generated``).
A version's origin is stored (migration 0017); a built-in's is said, never stored.
"""

from __future__ import annotations

from typing import Literal

from engine.storage import CheckVersion, RunCheck

#: Where a check comes from (the module docstring says what each means).
Origin = Literal["builtin", "pushed", "generated"]
#: The origins a push may name (``builtin`` is scorebox's own, never pushed).
PushedOrigin = Literal["pushed", "generated"]
PUSHED_ORIGINS: tuple[PushedOrigin, ...] = ("pushed", "generated")


def origin_of(check: RunCheck) -> Origin:
    """A run's check's origin: built-ins are resolved without a version id; a generated
    version's origin is kept with the run (runs stored before it say ``pushed``)."""
    if check.id is None:
        return "builtin"
    return "generated" if check.origin == "generated" else "pushed"


def version_origin(check: CheckVersion) -> Origin:
    """A stored version's origin: ``pushed`` or ``generated``."""
    return "generated" if check.origin == "generated" else "pushed"
