"""Moved to :mod:`engine.suites.pytest_plugin`; this import path is kept for one release."""

from __future__ import annotations

from engine.suites.pytest_plugin import *  # noqa: F403  (a pytest plugin's hooks, whatever they are)
