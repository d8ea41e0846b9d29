"""The optional extra ``scorebox[calibration]`` (scipy, krippendorff), imported on first use.

scipy costs about a second to import and 100 MB to install, so nothing imports it
until an agreement report is asked for.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from engine.errors import ConfigurationError

_HINT = "agreement statistics need scipy and krippendorff: pip install 'scorebox[calibration]'"


def _load(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigurationError(f"{name} is not installed; {_HINT}") from exc


def scipy_stats() -> ModuleType:
    """``scipy.stats``, or a ConfigurationError naming the extra to install."""
    return _load("scipy.stats")


def krippendorff() -> ModuleType:
    """The ``krippendorff`` package, or a ConfigurationError naming the extra to install."""
    return _load("krippendorff")
