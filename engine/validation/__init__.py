"""Static validation of a check's source: ``validate(source, policy, declared)``.

Pure: the source is parsed and compiled with ``ast``/``compile`` (never executed),
and every rule comes from :mod:`engine.contract` (and, for the ``restricted``
policy, :mod:`engine.contract.restricted`, which runs RestrictedPython's own policy).
``validate`` never raises on a user's mistake: each one is an :class:`Issue`
with a stable code from :data:`ISSUE_CODES`, a message that says how to fix it,
and a 1-based line and column. Decisions are explained in ``docs/validation.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.contract import Policy
from engine.environments.spec import PackageRules
from engine.validation.checker import _Validation
from engine.validation.facts import _gc_paused
from engine.validation.report import (
    ISSUE_CODES,
    CodeInfo,
    DeclaredCheck,
    EntrypointKind,
    Issue,
    MethodKind,
    Severity,
    ValidationReport,
)

__all__ = [
    "ISSUE_CODES",
    "CodeInfo",
    "DeclaredCheck",
    "EntrypointKind",
    "Issue",
    "MethodKind",
    "Severity",
    "ValidationReport",
    "validate",
]


def validate(
    source: str,
    policy: Policy | str = "standard",
    declared: DeclaredCheck | Mapping[str, Any] | None = None,
    packages: PackageRules | None = None,
    entry: str | None = None,
) -> ValidationReport:
    """Validate a check's source under ``policy`` against what the client ``declared``.

    ``declared`` may also be a mapping with :class:`DeclaredCheck`'s fields (None = not
    Raises ``ValueError`` only for an unknown policy or declaration (caller bugs).
    """
    if not isinstance(declared, DeclaredCheck):
        declared = DeclaredCheck.model_validate(dict(declared or {}))
    with _gc_paused():
        validation = _Validation(source, Policy(policy), declared, packages)
        validation.entry = entry
        return validation.run()
