"""The check file contract: the one source of truth for what a check is.

Pure and stdlib-only. The validator (host), the generator's prompts (host) and
the harness (inside the sandbox image, where this file is copied verbatim) all
import it, so the rules below exist exactly once.

**Carried into the sandbox image**, this whole package (every module under
``engine/contract/``, with :mod:`engine.harness`; ``CARRIED_PACKAGES`` in
:mod:`engine.sandbox.docker.image.constants`, copied verbatim to
``/opt/scorebox/engine/``): it imports nothing but the standard library (and
RestrictedPython in :mod:`engine.contract.restricted`), which an import-linter
contract in pyproject.toml enforces for every file put here. What only the host
needs lives elsewhere: :mod:`engine.validation.rules` (what helps people write
checks: parameter docs, the image's packages, model-check templates),
:mod:`engine.validation.stand_ins` (what each stand-in module holds) and
:func:`engine.catalog.kind_of_file` (what kind of check a pushed file is).

A check is Python source with one entrypoint, either

* a module-level function ``evaluate(...)``, or
* a class ``Check`` (usually deriving from ``CodeBasedCheck``/``BaseCheck``)
  whose ``evaluate`` is a staticmethod, a classmethod or a plain method.

``evaluate`` takes any subset of :data:`PARAMETER_NAMES`, in any order, bound by
name. It returns a score (``bool``, ``int`` or ``float``), a ``CheckResponse``,
or a ``(score, explanation)`` tuple.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping
from typing import Any

from engine.contract.params import (
    CHECK_BASE_CLASSES,
    CHECK_BASE_MODULES,
    ENTRYPOINT_CLASS,
    ENTRYPOINT_FUNCTION,
    PARAMETER_NAMES,
    REQUIRABLE_PARAMETERS,
    EntrypointError,
    Signature,
    bind_arguments,
    missing_inputs,
    parameters_of,
    resolve_entrypoint,
    signature_of,
)
from engine.contract.returns import InvalidScore, Score, coerce_score
from engine.contract.statuses import (
    CHECK_STATUSES,
    INT_MAX,
    INT_MIN,
    MAX_EXPLANATION_CHARS,
    PROTOCOL_VERSION,
    SCORE_KINDS,
    OutputType,
    Policy,
    Status,
)

#: Names re-exported from the submodules (``engine.contract.X`` as before the split).
__all__ = [
    "CHECK_BASE_CLASSES",
    "CHECK_BASE_MODULES",
    "CHECK_STATUSES",
    "ENTRYPOINT_CLASS",
    "ENTRYPOINT_FUNCTION",
    "INT_MAX",
    "INT_MIN",
    "MAX_EXPLANATION_CHARS",
    "PARAMETER_NAMES",
    "PROTOCOL_VERSION",
    "REQUIRABLE_PARAMETERS",
    "SCORE_KINDS",
    "EntrypointError",
    "InvalidScore",
    "OutputType",
    "Policy",
    "Score",
    "Signature",
    "Status",
    "bind_arguments",
    "coerce_score",
    "missing_inputs",
    "parameters_of",
    "resolve_entrypoint",
    "signature_of",
]


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
