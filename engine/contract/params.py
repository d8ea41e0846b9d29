"""Okareo-shaped checks' parameters and how each binds to a row (``evaluate``/``Check``).

Other formats' parameters live in :mod:`engine.contract.formats`. Carried into the
sandbox image (stdlib only).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Parameters a check's ``evaluate`` may declare, bound by name from the row.
PARAMETER_NAMES: tuple[str, ...] = (
    "model_output",
    "scenario_input",
    "scenario_result",
    "metadata",
    "model_input",
)


#: Parameters whose absence on a row makes the check ``skipped`` for that row.
REQUIRABLE_PARAMETERS: tuple[str, ...] = ("scenario_input", "scenario_result")

ENTRYPOINT_FUNCTION = "evaluate"
ENTRYPOINT_CLASS = "Check"
#: Base classes a ``Check`` class may derive from (any module prefix).
CHECK_BASE_CLASSES: frozenset[str] = frozenset({"CodeBasedCheck", "BaseCheck"})
#: Modules that provide the base classes; both resolve inside the sandbox.
CHECK_BASE_MODULES: tuple[str, ...] = ("engine.checks", "okareo.checks")


def missing_inputs(parameters: Sequence[str], row: Mapping[str, Any]) -> list[str]:
    """Required inputs the row lacks (absent or null): the check is ``skipped`` on it."""
    return [name for name in REQUIRABLE_PARAMETERS if name in parameters and row.get(name) is None]


@dataclass(frozen=True)
class Signature:
    """What ``evaluate`` accepts.

    ``parameters`` are the named ones, in declaration order. A ``**kwargs``
    parameter receives every contract parameter not named explicitly, so such a
    check requires nothing beyond what it names. ``*args`` is not allowed:
    arguments are bound by name only.
    """

    parameters: tuple[str, ...]
    var_keyword: bool = False

    @property
    def bound(self) -> tuple[str, ...]:
        """Every parameter passed to ``evaluate``."""
        if not self.var_keyword:
            return self.parameters
        return self.parameters + tuple(p for p in PARAMETER_NAMES if p not in self.parameters)


class EntrypointError(ValueError):
    """A loaded check module has no usable entrypoint."""


def resolve_entrypoint(namespace: Mapping[str, Any]) -> tuple[Any, Signature]:
    """Find ``evaluate`` in an executed check module: ``Check.evaluate`` first, then module-level.

    Raises :class:`EntrypointError` with a message that says how to fix it.
    """
    check_cls = namespace.get(ENTRYPOINT_CLASS)
    func: Any = None
    if isinstance(check_cls, type) and ENTRYPOINT_FUNCTION in vars(check_cls):
        raw = vars(check_cls)[ENTRYPOINT_FUNCTION]
        if isinstance(raw, staticmethod | classmethod):
            func = getattr(check_cls, ENTRYPOINT_FUNCTION)
        else:
            try:
                instance = check_cls()
            except Exception as exc:
                raise EntrypointError(
                    f"class {ENTRYPOINT_CLASS} could not be instantiated without arguments: {exc}"
                ) from exc
            func = getattr(instance, ENTRYPOINT_FUNCTION)
    elif callable(namespace.get(ENTRYPOINT_FUNCTION)):
        func = namespace[ENTRYPOINT_FUNCTION]
    if func is None:
        raise EntrypointError(
            f"define a function `{ENTRYPOINT_FUNCTION}(model_output, ...)` or a class "
            f"`{ENTRYPOINT_CLASS}` with a method `{ENTRYPOINT_FUNCTION}`"
        )
    return func, signature_of(func)


def signature_of(func: Any) -> Signature:
    """The contract signature of a callable, or :class:`EntrypointError` naming the defect."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise EntrypointError(f"cannot read the signature of evaluate: {exc}") from exc
    names: list[str] = []
    var_keyword = False
    for param in sig.parameters.values():
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            raise EntrypointError(
                f"`*{param.name}` is not supported: arguments are bound by name; "
                f"name the parameters you need from {', '.join(PARAMETER_NAMES)}"
            )
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            var_keyword = True
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY and param.name in PARAMETER_NAMES:
            raise EntrypointError(
                f"`{param.name}` is positional-only (declared before `/`): arguments are "
                "bound by name, so remove the `/`"
            )
        if param.name not in PARAMETER_NAMES:
            if param.default is not inspect.Parameter.empty:
                continue  # a helper parameter with a default is left alone
            raise EntrypointError(
                f"unknown parameter `{param.name}`; evaluate may take any of "
                f"{', '.join(PARAMETER_NAMES)}"
            )
        names.append(param.name)
    return Signature(tuple(names), var_keyword)


def bind_arguments(parameters: Sequence[str], row: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for ``evaluate`` from a row (pass ``Signature.bound``)."""
    kwargs: dict[str, Any] = {}
    for name in parameters:
        value = row.get(name)
        if name == "metadata" and value is None:
            value = {}
        kwargs[name] = value
    return kwargs
