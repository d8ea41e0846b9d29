"""``from engine.checks import CodeBasedCheck, CheckResponse``: the name check files import.

The classes live in :mod:`engine.contract.checks`; this module is the public,
stable import path, on the host and inside the sandbox image alike.
"""

from __future__ import annotations

from engine.contract.checks import BaseCheck, CheckResponse, CodeBasedCheck

__all__ = ["BaseCheck", "CheckResponse", "CodeBasedCheck"]
