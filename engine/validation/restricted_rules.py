"""The ``restricted`` policy's own rules: builtins and attributes a restricted check cannot
reach, private ``getattr`` names, and what RestrictedPython's policy rejects."""

from __future__ import annotations

import ast

from engine import contract
from engine.contract import restricted
from engine.validation.base import _ValidationBase
from engine.validation.facts import _AUGMENTED_ITEM_HINT, _RESTRICTED_HINTS, _Facts


class _RestrictedRules(_ValidationBase):
    """What the restricted policy refuses, each at its position."""

    def restricted(self, facts: _Facts) -> None:
        for name in facts.forbidden_loads:
            if name.id not in facts.bound:
                reason = contract.RESTRICTED_FORBIDDEN_BUILTINS[name.id]
                self.add(
                    "forbidden-builtin",
                    f"`{name.id}` is not available in a restricted check: {reason}",
                    name,
                )
        aliases: dict[str, str] = {}  # name bound by `import m [as n]` -> module it names
        for node in facts.imports:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    aliases[alias.asname or top] = alias.name if alias.asname else top
        for attribute in facts.denied_attributes:
            value = attribute.value
            module = aliases.get(value.id) if isinstance(value, ast.Name) else None
            why = contract.denied_attribute(module, attribute.attr) if module else None
            if why is not None:
                self.add(
                    "forbidden-attribute",
                    f"`{module}.{attribute.attr}` is not available: {why}",
                    attribute,
                )
        for constant in facts.private_getattrs:
            self.add(
                "private-attribute",
                f"attribute {constant.value!r} starts with `_`: restricted checks cannot use it",
                constant,
            )

    def restricted_policy(self, tree: ast.Module) -> None:
        """What RestrictedPython's own policy rejects, each with its position."""
        for problem in restricted.restricted_problems(self.source, tree=tree):
            if problem.code == restricted.SYNTAX_ERROR:
                continue  # reported by parse()/compile() already
            hint = _RESTRICTED_HINTS.get(problem.code, "")
            if problem.message.startswith("Augmented assignment of object"):
                hint = _AUGMENTED_ITEM_HINT
            message = problem.message.rstrip(".") + (f": {hint}" if hint else "")
            self.add(problem.code, message, line=problem.line, col=problem.col)
