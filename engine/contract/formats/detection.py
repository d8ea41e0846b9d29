"""Which format a check file is in, which function is its entry, and what each of the
entry's parameters is bound to: from the file's ``ast``, the same in the validator and in
the harness. Generic: every format's part comes from its adapter's fields. Carried into the
sandbox image (stdlib only).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from engine.contract.formats.shapes import FunctionShape, shapes_of
from engine.contract.formats.spec import Format, FormatAdapter, FormatError
from engine.contract.formats.table import ADAPTERS
from engine.contract.params import ENTRYPOINT_CLASS


@dataclass(frozen=True)
class Detected:
    """A file's format and its entry function (``Check`` for an Okareo class)."""

    format: Format
    entry: str
    shape: FunctionShape | None = None
    bindings: Mapping[str, str] = field(default_factory=dict)


def format_of_source(source: str) -> Format | None:
    """The format a check's source is in, or None when it has no (single) entry."""
    try:
        return detect(*shapes_of(ast.parse(source))).format
    except (SyntaxError, ValueError):
        return None


def fits(fmt: Format, shape: FunctionShape) -> bool:
    """Whether ``shape``'s parameters fit ``fmt`` (its name aside)."""
    return ADAPTERS[fmt].fits(shape)


def _named_fit(adapter: FormatAdapter, shape: FunctionShape) -> bool:
    """A function that has no entry name fits a positional format only by its names."""
    spec = adapter.spec
    if spec.positional is None:
        return adapter.fits(shape)
    names = tuple(p.name for p in shape.params[: spec.positional])
    return adapter.fits(shape) and names == tuple(spec.parameters)


_NO_ENTRY = (
    "the file has no entrypoint: define `evaluate(model_output, ...)` or a class `Check` "
    "(Okareo), `grade(sample, item)` (OpenAI grader), `get_assert(output, context)` "
    "(promptfoo), a @reward_function (reward-kit), or one public function taking "
    "input/output/expected (Braintrust, Phoenix) or inputs/outputs/reference_outputs "
    "(LangSmith)"
)


def detect(shapes: Sequence[FunctionShape], has_check: bool, entry: str | None = None) -> Detected:
    """The file's format and entry, or :class:`FormatError` saying how to pick one."""
    by_name = {s.name: s for s in shapes}  # the last definition wins, as in Python
    if entry is not None and entry != ENTRYPOINT_CLASS:
        shape = by_name.get(entry)
        if shape is None:
            raise FormatError(f"the file has no top-level function `{entry}` (the named entry)")
        return _detected(_format_of(shape, explicit=True), shape)
    if has_check:
        return Detected(_class_format(ENTRYPOINT_CLASS), ENTRYPOINT_CLASS)
    found = _decorated(by_name) or _by_entry_name(by_name) or _guessed(by_name)
    if found is None:
        raise FormatError(_NO_ENTRY)
    return found


def _class_format(name: str) -> Format:
    return next(f for f, a in ADAPTERS.items() if a.spec.entry_class == name)


def _decorated(by_name: Mapping[str, FunctionShape]) -> Detected | None:
    """The one function a format's decorator (then a marker) marks; several: an error."""
    for which in ("decorator", "marker"):
        for adapter in ADAPTERS.values():
            mark = getattr(adapter.spec, which)
            if mark is None:
                continue
            marked = [s for s in by_name.values() if mark in s.decorators]
            if len(marked) > 1:
                raise FormatError(_several([s.name for s in marked], f"are @{mark}"))
            if marked and which == "decorator":
                return _detected(adapter.format, marked[0])
            if marked:  # a marker leaves the format to the entry's parameters
                return _detected(_format_of(marked[0], explicit=True), marked[0])
    return None


def _by_entry_name(by_name: Mapping[str, FunctionShape]) -> Detected | None:
    """The first function called by a format's entry name, in the table's order."""
    for adapter in ADAPTERS.values():
        for name in adapter.spec.entry_names:
            shape = by_name.get(name)
            if shape is not None:
                return _detected(_format_of(shape, explicit=False), shape)
    return None


def _guessed(by_name: Mapping[str, FunctionShape]) -> Detected | None:
    """The one public function whose parameter names fit exactly one guessable format."""
    guessable = [a for a in ADAPTERS.values() if a.spec.guessable]
    candidates: list[tuple[FunctionShape, Format]] = []
    for shape in by_name.values():
        if shape.name.startswith("_"):
            continue
        matching = [a.format for a in guessable if _named_fit(a, shape)]
        if len(matching) == 1:
            candidates.append((shape, matching[0]))
    if len(candidates) > 1:
        raise FormatError(_several([s.name for s, _ in candidates], "fit a scorer format"))
    if candidates:
        return _detected(candidates[0][1], candidates[0][0])
    return None


def _several(names: list[str], what: str) -> str:
    listed = ", ".join(f"`{n}`" for n in names)
    return (
        f"several functions {what}: {listed}; name the entry at upload (`entry` in the API, "
        "`--entry` in the CLI) or make the others private with a leading `_`"
    )


def _format_of(shape: FunctionShape, *, explicit: bool) -> Format:
    """The format of an entry found by its name, or named at upload (``explicit``)."""
    for adapter in ADAPTERS.values():
        if adapter.spec.decorator is not None and adapter.spec.decorator in shape.decorators:
            return adapter.format
    preferred = next(
        (a for a in ADAPTERS.values() if a.spec.name_decides and shape.name in a.spec.entry_names),
        None,
    )
    if preferred is not None and preferred.fits(shape):
        return preferred.format
    ranked = sorted(
        (a for a in ADAPTERS.values() if a.spec.guess_rank is not None),
        key=lambda a: a.spec.guess_rank or 0,
    )
    for adapter in ranked:
        if _named_fit(adapter, shape):
            return adapter.format
    for adapter in ADAPTERS.values():
        if adapter.loose_fit(shape, explicit):
            return adapter.format
    if preferred is not None:
        return preferred.format  # its own error (bindings) names what is wrong
    raise FormatError(
        f"`{shape.name}` takes {', '.join(shape.required) or 'no parameters'}, which fit no "
        "scorer format: see docs/writing-checks/formats.md for each format's parameters"
    )


def _detected(fmt: Format, shape: FunctionShape) -> Detected:
    return Detected(fmt, shape.name, shape, bindings_of(fmt, shape))


def bindings_of(fmt: Format, shape: FunctionShape) -> dict[str, str]:
    """What each of the entry's parameters is bound to, or :class:`FormatError`."""
    adapter = ADAPTERS[fmt]
    spec = adapter.spec
    if shape.is_async and not spec.async_entry:
        raise FormatError(
            f"`{shape.name}` is `async def`, but a {spec.title} is called synchronously: "
            "make it a plain `def`"
        )
    if spec.needs_var_keyword and not shape.var_keyword:
        raise FormatError(
            f"`{shape.name}` is a @{spec.decorator} without `**kwargs`: {spec.format.value} "
            "requires it, add `**kwargs` to its parameters"
        )
    if spec.positional is not None:
        if len(shape.required) != spec.positional:
            wanted = ", ".join(spec.parameters)
            raise FormatError(
                f"`{shape.name}` must take exactly {spec.positional} parameters ({wanted}); "
                f"it takes {', '.join(shape.required) or 'none'}"
            )
        return {
            param.name: meaning
            for param, meaning in zip(shape.params, spec.parameters.values(), strict=False)
        }
    own = adapter.own_bindings(shape)
    if own is not None:
        return own
    return _keyword_bindings(adapter, shape)


def _keyword_bindings(adapter: FormatAdapter, shape: FunctionShape) -> dict[str, str]:
    spec = adapter.spec
    out: dict[str, str] = {}
    for param in shape.params:
        if param.name in spec.parameters:
            out[param.name] = spec.parameters[param.name]
        elif param.has_default:
            configured = " (or the check's configuration)" if spec.configured_by_keyword else ""
            out[param.name] = "its default" + configured
        else:
            raise FormatError(
                f"`{param.name}` is not a parameter of a {spec.title}: it may take "
                f"{', '.join(n for n in spec.parameters if not n.startswith(('*', 'other')))}"
            )
    if shape.var_keyword and "**kwargs" in spec.parameters:
        out["**kwargs"] = spec.parameters["**kwargs"]
    return out
