"""Base classes for check files, imported by them as ``engine.checks`` (or ``okareo.checks``).

Pure and stdlib-only: this file is also copied into the sandbox image, where
``okareo.checks`` re-exports it so Okareo check files run unchanged.
"""

from __future__ import annotations

from abc import ABC
from dataclasses import dataclass
from typing import Any

__all__ = ["BaseCheck", "CheckResponse", "CodeBasedCheck"]


@dataclass
class CheckResponse:
    """A score with an optional explanation and metadata."""

    score: bool | int | float
    explanation: str | None = None
    metadata: dict[str, Any] | None = None


class BaseCheck(ABC):  # noqa: B024 - subclasses define evaluate in one of several forms
    """Base of all check classes. A subclass defines ``evaluate``."""

    def check_config(self) -> dict[str, Any]:
        """Okareo compatibility: a check's configuration (none by default)."""
        return {}


class CodeBasedCheck(BaseCheck):
    """Base class of a code check: define ``evaluate`` as a staticmethod."""
