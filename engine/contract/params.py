"""Okareo-shaped checks' parameters and how each binds to a row (``evaluate``/``Check``).

Other formats' parameters live in :mod:`engine.contract.formats`. Carried into the
sandbox image (stdlib only).
"""

from __future__ import annotations

import inspect
import types
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


#: One parameter as :func:`signature_of` reads it: its name, its kind, whether it has a default.
Param = tuple[str, inspect._ParameterKind, bool]

_POSITIONAL_ONLY = inspect.Parameter.POSITIONAL_ONLY
_POSITIONAL_OR_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD
_VAR_POSITIONAL = inspect.Parameter.VAR_POSITIONAL
_KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY
_VAR_KEYWORD = inspect.Parameter.VAR_KEYWORD
_CO_VARARGS, _CO_VARKEYWORDS = inspect.CO_VARARGS, inspect.CO_VARKEYWORDS


def code_parameters(func: Any) -> list[Param] | None:
    """The parameters of a plain function, or a method bound to one, read from its code
    object as ``inspect.signature`` reads them; None for any other callable (a decorated
    function, a partial, a callable object, a builtin...), which ``inspect`` reads instead.

    In a process just forked (a check's, in the sandbox) ``inspect.signature`` touches
    enough of the parent's memory to cost about a hundred copied pages; this costs a few.
    """
    bound = type(func) is types.MethodType
    if bound:
        func = func.__func__
    # A function with attributes of its own may carry __wrapped__ or __signature__.
    if type(func) is not types.FunctionType or func.__dict__:
        return None
    code = func.__code__
    positional, posonly, kwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    if bound and positional == 0:
        return None  # nothing for the instance to bind to: inspect says what is wrong
    names = code.co_varnames
    defaults = len(func.__defaults__ or ())
    kwdefaults = func.__kwdefaults__ or {}
    params: list[Param] = []
    for i in range(positional):
        kind = _POSITIONAL_ONLY if i < posonly else _POSITIONAL_OR_KEYWORD
        params.append((names[i], kind, i >= positional - defaults))
    extra = positional + kwonly
    if code.co_flags & _CO_VARARGS:
        params.append((names[extra], _VAR_POSITIONAL, False))
        extra += 1
    for name in names[positional : positional + kwonly]:
        params.append((name, _KEYWORD_ONLY, name in kwdefaults))
    if code.co_flags & _CO_VARKEYWORDS:
        params.append((names[extra], _VAR_KEYWORD, False))
    return params[1:] if bound else params


def inspect_parameters(func: Any) -> list[Param]:
    """The parameters of any callable, through ``inspect.signature``."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise EntrypointError(f"cannot read the signature of evaluate: {exc}") from exc
    empty = inspect.Parameter.empty
    return [(p.name, p.kind, p.default is not empty) for p in sig.parameters.values()]


def parameters_of(func: Any) -> list[Param]:
    """A callable's parameters in declaration order (:class:`EntrypointError` when they
    cannot be read): from its code where it is a plain function, else through ``inspect``."""
    params = code_parameters(func)
    return inspect_parameters(func) if params is None else params


def signature_of(func: Any) -> Signature:
    """The contract signature of a callable, or :class:`EntrypointError` naming the defect."""
    params = parameters_of(func)
    names: list[str] = []
    var_keyword = False
    for name, kind, has_default in params:
        if kind is _VAR_POSITIONAL:
            raise EntrypointError(
                f"`*{name}` is not supported: arguments are bound by name; "
                f"name the parameters you need from {', '.join(PARAMETER_NAMES)}"
            )
        if kind is _VAR_KEYWORD:
            var_keyword = True
            continue
        if kind is _POSITIONAL_ONLY and name in PARAMETER_NAMES:
            raise EntrypointError(
                f"`{name}` is positional-only (declared before `/`): arguments are "
                "bound by name, so remove the `/`"
            )
        if name not in PARAMETER_NAMES:
            if has_default:
                continue  # a helper parameter with a default is left alone
            raise EntrypointError(
                f"unknown parameter `{name}`; evaluate may take any of {', '.join(PARAMETER_NAMES)}"
            )
        names.append(name)
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
