"""``signature_of`` reads a plain function's parameters from its code object: the same
parameters, kinds and defaults as ``inspect.signature``, for any signature Python allows."""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.contract import EntrypointError, signature_of
from engine.contract.params import code_parameters, inspect_parameters

NAMES = ("model_output", "scenario_input", "scenario_result", "metadata", "model_input")
OTHER = ("threshold", "helper", "x")


@st.composite
def parameter_lists(draw: st.DrawFn) -> str:
    """The text between a ``def``'s parentheses: any legal mix of kinds and defaults."""
    pool = list(NAMES + OTHER)
    names = draw(st.permutations(pool))
    sizes = draw(st.tuples(*(st.integers(0, 2) for _ in range(3))))
    posonly: list[str] = []
    positional: list[str] = []
    kwonly: list[str] = []
    at = 0
    for bucket, size in zip((posonly, positional, kwonly), sizes, strict=True):
        bucket.extend(names[at : at + size])
        at += size
    defaults_from = draw(st.integers(0, len(posonly) + len(positional)))
    parts: list[str] = []
    for i, name in enumerate(posonly + positional):
        parts.append(f"{name}=1" if i >= defaults_from else name)
        if posonly and i == len(posonly) - 1:
            parts.append("/")
    if draw(st.booleans()):
        parts.append("*args")
    elif kwonly:
        parts.append("*")
    parts += [f"{name}=2" if draw(st.booleans()) else name for name in kwonly]
    if draw(st.booleans()):
        parts.append("**kwargs")
    return ", ".join(parts)


def _define(params: str, shape: str) -> Any:
    """``evaluate`` with ``params``, as a plain function or as a class's method."""
    namespace: dict[str, Any] = {}
    if shape == "function":
        exec(f"def evaluate({params}):\n    return 1\n", namespace)
        return namespace["evaluate"]
    decorator = {"method": "", "static": "@staticmethod", "class": "@classmethod"}[shape]
    first = "" if shape == "static" else ("self, " if shape == "method" else "cls, ")
    source = (
        f"class Check:\n    {decorator}\n    def evaluate({first}{params}):\n        return 1\n"
    )
    exec(source, namespace)
    return namespace["Check"]().evaluate


@settings(max_examples=300, deadline=None)
@given(parameter_lists(), st.sampled_from(["function", "method", "static", "class"]))
def test_code_object_reading_equals_inspect(params: str, shape: str) -> None:
    func = _define(params, shape)
    fast = code_parameters(func)
    assert fast is not None, "a plain function or method is read from its code"
    assert fast == inspect_parameters(func)


def test_other_callables_go_through_inspect() -> None:
    def evaluate(model_output: str) -> bool:
        return bool(model_output)

    @functools.wraps(evaluate)
    def wrapped(*args: Any, **kwargs: Any) -> bool:
        return evaluate(*args, **kwargs)

    class Callable:
        def __call__(self, model_output: str) -> bool:
            return True

    def bare_method() -> int:  # bound, it has nothing for the instance
        return 1

    bound_to_nothing = bare_method.__get__(object())
    for func in (wrapped, functools.partial(evaluate), Callable(), len, bound_to_nothing):
        assert code_parameters(func) is None
    # wraps() follows __wrapped__: the contract sees evaluate's parameters, not *args
    assert signature_of(wrapped).parameters == ("model_output",)
    with pytest.raises(EntrypointError, match="cannot read the signature"):
        signature_of(bound_to_nothing)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("model_output, *args", "`*args` is not supported"),
        ("model_output, /, metadata", "`model_output` is positional-only"),
        ("model_output, threshold", "unknown parameter `threshold`"),
        ("threshold, *args", "unknown parameter `threshold`"),  # in declaration order
    ],
)
def test_defects_named_in_declaration_order(params: str, message: str) -> None:
    for shape in ("function", "method"):
        with pytest.raises(EntrypointError, match=re.escape(message)):
            signature_of(_define(params, shape))
