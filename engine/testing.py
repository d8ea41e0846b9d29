"""Moved to :mod:`engine.suites.testing`; this import path is kept for one release."""

from __future__ import annotations

from engine.suites.testing import assert_scores, assert_suite

__all__ = ["assert_scores", "assert_suite"]
