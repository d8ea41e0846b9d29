"""The unit tests' header line: whether property tests run their full budget."""

from __future__ import annotations

import pytest

from tests.hypothesis_budget import fast_loop


def pytest_report_header(config: pytest.Config) -> str | None:
    """Say so when property tests run the fast loop's smaller budget."""
    if fast_loop():
        return "property tests: a tenth of their examples (SCOREBOX_TEST_FAST=1, the fast loop)"
    return None
