"""The check file contract: the one source of truth for what a check is.

Pure and stdlib-only. The validator (host), the generator's prompts (host) and
the harness (inside the sandbox image, where this file is copied verbatim) all
import it, so the rules below exist exactly once.

**Carried into the sandbox image** (``ENGINE_FILES`` in
:mod:`engine.sandbox.docker.image.constants`, copied verbatim to
``/opt/scorebox/engine/``): this module, :mod:`engine.contract.checks` (the base
classes check files import) and :mod:`engine.contract.restricted` (the restricted
policy's run-time guards). They import nothing but the standard library (and
RestrictedPython), which an import-linter contract in pyproject.toml enforces.
**Host only**: :mod:`engine.contract.rules` (what helps people write checks:
parameter docs, the image's packages, model-check templates) and
:mod:`engine.contract.files` (what kind of check a pushed file is).

A check is Python source with one entrypoint, either

* a module-level function ``evaluate(...)``, or
* a class ``Check`` (usually deriving from ``CodeBasedCheck``/``BaseCheck``)
  whose ``evaluate`` is a staticmethod, a classmethod or a plain method.

``evaluate`` takes any subset of :data:`PARAMETER_NAMES`, in any order, bound by
name. It returns a score (``bool``, ``int`` or ``float``), a ``CheckResponse``,
or a ``(score, explanation)`` tuple.
"""

from __future__ import annotations

import inspect
import math
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

#: Version of the host <-> harness job protocol; bumped on any incompatible change.
PROTOCOL_VERSION = 2


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


class OutputType(StrEnum):
    """Type of a check's score."""

    BOOL = "bool"
    INT = "int"
    FLOAT = "float"


#: Ints must fit a signed 64-bit integer (what databases and JSON consumers hold).
INT_MIN = -(2**63)
INT_MAX = 2**63 - 1

#: Longest explanation kept from a check, in characters.
MAX_EXPLANATION_CHARS = 4096


class Status(StrEnum):
    """Typed outcome of one check on one row. Never folded into a score of 0."""

    OK = "ok"
    ERROR = "error"  # evaluate raised
    TIMEOUT = "timeout"  # per-row or batch wall clock passed
    OOM = "oom"  # memory limit reached
    INVALID_SCORE = "invalid_score"  # wrong type, NaN/inf, int out of range
    OUTPUT_LIMIT = "output_limit"  # the check printed more than allowed
    CRASHED = "crashed"  # the process died (segfault, os._exit, killed)
    SKIPPED = "skipped"  # inputs the check requires are missing on the row
    JUDGE_ERROR = "judge_error"  # LLM unreachable or reply unparseable
    SANDBOX_ERROR = "sandbox_error"  # our infrastructure failed


class Policy(StrEnum):
    """How strictly a check's source is vetted (and, for ``restricted``, executed)."""

    STANDARD = "standard"
    RESTRICTED = "restricted"


#: Modules a ``restricted`` check may import (top-level name, or exact dotted name).
RESTRICTED_IMPORT_ALLOWLIST: frozenset[str] = frozenset(
    {
        "re",
        "json",
        "math",
        "cmath",
        "statistics",
        "string",
        "collections",
        "itertools",
        "functools",
        "operator",
        "difflib",
        "unicodedata",
        "textwrap",
        "datetime",
        "decimal",
        "fractions",
        "typing",
        "dataclasses",
        "enum",
        "ast",
        "html",
        "heapq",
        "bisect",
        "random",
        "numbers",
        "__future__",
        "engine.checks",
        "okareo.checks",
        "numpy",
        "regex",
        "jsonschema",
        "yaml",
        "Levenshtein",
        "rapidfuzz",
    }
)


def import_allowed(module: str, allowlist: Iterable[str] = RESTRICTED_IMPORT_ALLOWLIST) -> bool:
    """Whether ``module`` (dotted) is allowed: it, or one of its parents, is listed."""
    allowed = set(allowlist)
    parts = module.split(".")
    return any(".".join(parts[: i + 1]) in allowed for i in range(len(parts)))


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


class InvalidScore(ValueError):
    """A check returned something that is not an acceptable score."""


@dataclass(frozen=True)
class Score:
    """A coerced check result."""

    score: bool | int | float
    output_type: OutputType
    explanation: str | None = None
    metadata: dict[str, Any] | None = None


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(value).__name__} {text}"


def _plain_scalar(value: Any) -> Any:
    """numpy (and similar) scalars to the Python value they hold; others unchanged."""
    module = type(value).__module__ or ""
    if (
        module.split(".")[0] == "numpy"
        and hasattr(value, "item")
        and getattr(value, "ndim", 1) == 0
    ):
        return value.item()
    return value


def coerce_score(value: Any, expected: OutputType | None = None) -> Score:
    """Turn what ``evaluate`` returned into a :class:`Score`, or raise :class:`InvalidScore`.

    ``bool`` is recognised before ``int``. An ``int`` is accepted where ``float``
    is expected (widened); nothing else changes type. NaN, infinities and ints
    outside the signed 64-bit range are invalid.
    """
    explanation: Any = None
    metadata: Any = None
    if isinstance(value, tuple):
        if len(value) != 2:
            raise InvalidScore(
                f"a tuple result must be (score, explanation); got {len(value)} items"
            )
        value, explanation = value
    elif type(value).__name__ == "CheckResponse" and hasattr(value, "score"):
        explanation = getattr(value, "explanation", None)
        metadata = getattr(value, "metadata", None)
        value = value.score
    elif (
        isinstance(value, Mapping)
        and "score" in value
        and set(value)
        <= {
            "score",
            "explanation",
            "metadata",
        }
    ):
        explanation = value.get("explanation")
        metadata = value.get("metadata")
        value = value["score"]

    value = _plain_scalar(value)
    if isinstance(value, bool):
        actual = OutputType.BOOL
    elif isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:
            raise InvalidScore(f"int score {value} is outside the signed 64-bit range")
        actual = OutputType.INT
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidScore(f"score must be a finite number, got {value!r}")
        actual = OutputType.FLOAT
    else:
        raise InvalidScore(f"score must be bool, int or float, got {_describe(value)}")

    if expected is not None and actual is not expected:
        if expected is OutputType.FLOAT and actual is OutputType.INT:
            value, actual = float(value), OutputType.FLOAT
        else:
            raise InvalidScore(f"expected a {expected.value} score, got {_describe(value)}")

    if explanation is not None and not isinstance(explanation, str):
        explanation = str(explanation)
    if explanation is not None and len(explanation) > MAX_EXPLANATION_CHARS:
        explanation = explanation[: MAX_EXPLANATION_CHARS - 3] + "..."
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidScore(f"CheckResponse.metadata must be a dict, got {_describe(metadata)}")
    return Score(value, actual, explanation, metadata)


# --- Model checks (prompt templates judged by an LLM) -------------------------------------


# --- Names a check file sees, imports it may make, parameters it may mistype -----------------

#: What ``engine.checks`` / ``okareo.checks`` export inside the sandbox; importing any
#: other name from them fails when the check loads.
CHECK_MODULE_EXPORTS: Mapping[str, frozenset[str]] = {
    "engine.checks": frozenset({"BaseCheck", "CheckResponse", "CodeBasedCheck"}),
    "okareo.checks": frozenset(
        {"BaseCheck", "CheckOutputType", "CheckResponse", "CodeBasedCheck", "ModelBasedCheck"}
    ),
}

#: ``typing`` names bound in a check's namespace before it runs (both policies):
#: Okareo's published examples annotate ``-> Union[bool, int, float]`` without
#: importing ``Union``, and must load unchanged.
PRELUDE_TYPING_NAMES: tuple[str, ...] = ("Any", "Dict", "List", "Optional", "Tuple", "Union")


def check_prelude() -> dict[str, Any]:
    """Names to bind in a check's module namespace before executing it."""
    return {name: getattr(typing, name) for name in PRELUDE_TYPING_NAMES}


#: Builtins a ``restricted`` check gets beyond RestrictedPython's ``safe_builtins``.
#: ``getattr``/``hasattr``/``setattr``/``delattr`` are guarded (no names starting
#: with ``_``) and ``type`` takes one argument only.
RESTRICTED_EXTRA_BUILTINS: tuple[str, ...] = (
    "all",
    "any",
    "bytes",
    "classmethod",
    "delattr",
    "dict",
    "enumerate",
    "filter",
    "format",
    "frozenset",
    "getattr",
    "hasattr",
    "iter",
    "list",
    "map",
    "max",
    "min",
    "next",
    "object",
    "property",
    "reversed",
    "set",
    "setattr",
    "sorted",
    "staticmethod",
    "sum",
    "super",
    "tuple",
    "type",
    "zip",
    "NotImplemented",
)

#: Builtins a ``restricted`` check cannot use, and why (each is absent at run time).
RESTRICTED_FORBIDDEN_BUILTINS: Mapping[str, str] = {
    "eval": "it runs arbitrary code",
    "exec": "it runs arbitrary code",
    "compile": "it makes new code",
    "open": "a check has no files to read or write",
    "input": "a check has no terminal",
    "breakpoint": "a check cannot be debugged interactively",
    "globals": "it exposes the namespace unguarded",
    "locals": "it exposes the namespace unguarded",
    "vars": "it exposes an object's attributes unguarded",
    "dir": "it lists private attributes",
    "help": "a check has no terminal",
    "exit": "a check must return a score, not end the process",
    "quit": "a check must return a score, not end the process",
    "memoryview": "it exposes raw memory",
    "__import__": "use an `import` statement",
}

_UNSAFE_YAML = "it can build arbitrary Python objects: use yaml.safe_load"
_NUMPY_FILES = "a check has no files to read or write"
_NUMPY_INTERNALS = "it reaches numpy's file, pickle and native-code helpers"
_UNGUARDED_ATTRIBUTES = "it reads attributes without the guards: use getattr() or a lambda"
_EVALUATES_STRINGS = "it evaluates strings (annotations) as unguarded code"

#: Attributes (and submodules) of allowlisted modules a ``restricted`` check cannot use,
#: and why: they build arbitrary objects, load native code or touch files.
RESTRICTED_DENIED_ATTRIBUTES: Mapping[str, Mapping[str, str]] = {
    "operator": dict.fromkeys(("attrgetter", "methodcaller"), _UNGUARDED_ATTRIBUTES),
    "typing": dict.fromkeys(("get_type_hints", "ForwardRef"), _EVALUATES_STRINGS),
    "functools": dict.fromkeys(("singledispatch", "singledispatchmethod"), _EVALUATES_STRINGS),
    "yaml": dict.fromkeys(
        (
            "load",
            "load_all",
            "full_load",
            "full_load_all",
            "unsafe_load",
            "unsafe_load_all",
            "Loader",
            "FullLoader",
            "UnsafeLoader",
            "CLoader",
            "CFullLoader",
            "CUnsafeLoader",
            "constructor",
            "loader",
            "cyaml",
            "add_constructor",
            "add_multi_constructor",
        ),
        _UNSAFE_YAML,
    )
    | dict.fromkeys(
        ("dump", "dump_all", "Dumper", "CDumper", "add_representer", "add_multi_representer"),
        "it serialises any object's internals: use yaml.safe_dump",
    ),
    "numpy": {
        **dict.fromkeys(
            (
                "load",
                "save",
                "savez",
                "savez_compressed",
                "savetxt",
                "loadtxt",
                "genfromtxt",
                "fromfile",
                "fromregex",
                "memmap",
                "DataSource",
            ),
            _NUMPY_FILES,
        ),
        **dict.fromkeys(
            ("lib", "core", "ctypeslib", "f2py", "distutils", "testing"), _NUMPY_INTERNALS
        ),
    },
}


def denied_attribute(module: str, attribute: str) -> str | None:
    """Why a restricted check may not use ``module.attribute``, or None when it may."""
    return RESTRICTED_DENIED_ATTRIBUTES.get(module, {}).get(attribute)


def denied_module(module: str) -> str | None:
    """Why a restricted check may not import ``module`` (dotted) though its package is
    allowlisted (``yaml.constructor``), or None."""
    parts = module.split(".")
    for i in range(1, len(parts)):
        reason = denied_attribute(".".join(parts[:i]), parts[i])
        if reason is not None:
            return reason
    return None


def char_column(line: str, col_offset: int) -> int:
    """1-based character column of an ``ast`` ``col_offset`` (a UTF-8 byte offset) in ``line``."""
    if line.isascii():
        return col_offset + 1
    return len(line.encode("utf-8", "surrogatepass")[:col_offset].decode("utf-8", "replace")) + 1
