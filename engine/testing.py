"""The assertions for Python tests: ``from engine.testing import assert_scores, assert_suite``.

A permanent import path (the docs' Python API page names it), apart from where the code
lives (:mod:`engine.suites.testing`, beside the suite file it reads), so tests written
against it never follow a move.
"""

from __future__ import annotations

from engine.suites.testing import assert_scores, assert_suite

__all__ = ["assert_scores", "assert_suite"]
