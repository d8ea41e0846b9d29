"""How many examples a property test runs: the number it states, except in the fast loop.

``scripts/dev.sh test-fast`` sets ``SCOREBOX_TEST_FAST=1``, and there a property test runs a
tenth of its examples (at least ten), so the loop stays quick. Every other run, the full
suite of ``scripts/dev.sh test`` and a plain ``pytest`` included, runs the number the test
states, and so does any run with ``CI`` set, whatever else is set: CI always runs the full
budget.
"""

from __future__ import annotations

import os

#: The fewest examples a property test runs, in the fast loop too.
FLOOR = 10


def fast_loop() -> bool:
    """True in ``scripts/dev.sh test-fast`` (``SCOREBOX_TEST_FAST=1``), never under CI."""
    in_ci = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
    return os.environ.get("SCOREBOX_TEST_FAST") == "1" and not in_ci


def examples(full: int) -> int:
    """``full`` examples, or a tenth of them (at least :data:`FLOOR`) in the fast loop."""
    return max(FLOOR, full // 10) if fast_loop() else full
