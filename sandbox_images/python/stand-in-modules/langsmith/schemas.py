"""``langsmith.schemas``, as a stand-in: the names evaluators use in annotations."""

from __future__ import annotations

from typing import Any

__all__ = ["Example", "Run"]

#: scorebox passes ``run`` and ``example`` as dicts whose keys are also attributes.
Run = Any
Example = Any
