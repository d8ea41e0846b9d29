"""Compile and execute a ``restricted`` check under RestrictedPython's guards.

Stdlib + RestrictedPython + :mod:`engine.contract` only: this file is copied into
the sandbox image, where the harness calls :func:`exec_restricted` and then
``contract.resolve_entrypoint`` on the namespace it returns. The validator uses
:func:`restricted_problems` on the host to report the same rules statically.

RestrictedPython is a lint and defence-in-depth layer, not the isolation
boundary (the container is). What the guards enforce here:

* no names or attributes starting with ``_`` (so no ``__class__``,
  ``__subclasses__``, ``__globals__``, ``__builtins__``), no frame/code/generator
  internals, no ``eval``/``exec`` calls (compile time);
* builtins are ``safe_builtins`` plus ``contract.RESTRICTED_EXTRA_BUILTINS``:
  no ``open``, ``compile``, ``globals``, ``vars``, ``dir``, ``__import__``...;
* ``import`` admits only ``contract.RESTRICTED_IMPORT_ALLOWLIST``; an attribute
  that is a module outside it (``typing.sys``) is refused, and so are the
  ``contract.RESTRICTED_DENIED_ATTRIBUTES`` of allowlisted ones (``yaml.load``);
* attribute/item writes only on objects the check made (its own classes and
  instances) and on dicts, lists and sets;
* ``str.format`` looks fields up through the same guard.

One extension to RestrictedPython's policy: annotated assignments
(``count: int = 0``, dataclass fields) are allowed; their targets go through
the same name and write guards as plain assignments.
"""

from __future__ import annotations

import _string  # type: ignore[import-not-found]  # what string.Formatter itself uses
import ast
import builtins
import importlib
import operator
import re
import string
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from RestrictedPython.Eval import default_guarded_getitem, default_guarded_getiter
from RestrictedPython.Guards import (
    guarded_iter_unpack_sequence,
    guarded_unpack_sequence,
    safe_builtins,
    safer_getattr,
)
from RestrictedPython.transformer import RestrictingNodeTransformer

from engine import contract

__all__ = [
    "PRIVATE_ATTRIBUTE",
    "PRIVATE_NAME",
    "RESTRICTED_FORBIDDEN_CALL",
    "RESTRICTED_SYNTAX",
    "SYNTAX_ERROR",
    "RestrictedCompileError",
    "RestrictedProblem",
    "compile_restricted_check",
    "exec_restricted",
    "restricted_globals",
    "restricted_problems",
]

#: Module name a restricted check runs as (the harness uses the same for standard checks).
CHECK_MODULE = "scorebox_check"

# Issue codes (the validator lists them with their meaning).
SYNTAX_ERROR = "syntax-error"
PRIVATE_NAME = "private-name"
PRIVATE_ATTRIBUTE = "private-attribute"
RESTRICTED_FORBIDDEN_CALL = "forbidden-builtin"
RESTRICTED_SYNTAX = "restricted-syntax"

_LINE_SPLIT = re.compile(r"\r\n|\r|\n")


class RestrictedProblem(NamedTuple):
    """One reason a source does not compile under the restricted policy."""

    message: str
    line: int | None
    col: int | None  # 1-based character column
    code: str = RESTRICTED_SYNTAX


class RestrictedCompileError(SyntaxError):
    """Raised when a check's source does not compile under the restricted policy."""

    def __init__(self, problems: list[RestrictedProblem]) -> None:
        self.problems = problems
        lines = [
            f"line {p.line}, col {p.col}: {p.message}" if p.line is not None else p.message
            for p in problems
        ]
        super().__init__("the check breaks the restricted policy:\n  " + "\n  ".join(lines))


class _Transformer(RestrictingNodeTransformer):
    """RestrictedPython's policy, keeping each problem's node position and kind."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.problems: list[RestrictedProblem] = []
        self._lines = lines

    def error(self, node: ast.AST, info: str) -> None:
        super().error(node, info)
        line: int | None = getattr(node, "lineno", None)
        offset: int | None = getattr(node, "col_offset", None)
        if (
            isinstance(node, ast.Attribute)
            and node.end_lineno == line
            and node.end_col_offset is not None
        ):
            offset = node.end_col_offset - len(node.attr.encode("utf-8"))  # point at the name
        col = None
        if line is not None and offset is not None and 0 < line <= len(self._lines):
            col = contract.char_column(self._lines[line - 1], offset)
        self.problems.append(RestrictedProblem(info, line, col, _classify(node, info)))

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:  # noqa: N802 - ast visitor name
        """Allow ``x: T = v``: target, annotation and value are guarded like any other."""
        return self.node_contents_visit(node)


def _classify(node: ast.AST, info: str) -> str:
    if isinstance(node, ast.Attribute):
        return PRIVATE_ATTRIBUTE
    if isinstance(node, ast.Call):
        return RESTRICTED_FORBIDDEN_CALL  # eval(...) / exec(...)
    if 'starts with "_"' in info or "__roles__" in info:
        return PRIVATE_NAME
    return RESTRICTED_SYNTAX


def _failure(message: str, line: int | None = None, col: int | None = None) -> _Checked:
    return None, [RestrictedProblem(message, line, col, SYNTAX_ERROR)]


_Checked = tuple[ast.Module | None, list[RestrictedProblem]]


def _parse(source: str, filename: str) -> _Checked:
    try:
        return ast.parse(source, filename, "exec"), []
    except SyntaxError as exc:
        return _failure(exc.msg, exc.lineno, exc.offset)
    except (ValueError, RecursionError, MemoryError) as exc:
        return _failure(f"cannot parse the source: {exc}")


def _transform(source: str, tree: ast.Module) -> _Checked:
    """Apply RestrictedPython's policy to ``tree`` (in place); the result and its problems."""
    transformer = _Transformer(_LINE_SPLIT.split(source))
    try:
        result = transformer.visit(tree)
    except (RecursionError, MemoryError):
        return _failure("the source is nested too deeply")
    problems = sorted(transformer.problems, key=lambda p: (p.line or 0, p.col or 0))
    return result, problems


def restricted_problems(
    source: str, filename: str = "<check>", tree: ast.Module | None = None
) -> list[RestrictedProblem]:
    """Why ``source`` breaks the restricted policy (empty: it does not).

    Pass ``tree`` (``ast.parse(source)``) to save parsing again; it is transformed in
    place, so do not use it afterwards. Errors only the compiler finds (a duplicate
    argument, ``return`` outside a function) are not looked for: compile to see them.
    """
    if tree is None:
        tree, problems = _parse(source, filename)
        if tree is None:
            return problems
    return _transform(source, tree)[1]


def compile_restricted_check(source: str, filename: str = "<check>") -> types.CodeType:
    """Compile ``source`` under the restricted policy, or raise :class:`RestrictedCompileError`."""
    tree, problems = _parse(source, filename)
    if tree is not None:
        tree, problems = _transform(source, tree)
    if tree is None or problems:
        raise RestrictedCompileError(problems)
    try:
        # dont_inherit: this module's own `from __future__ import annotations` must not leak in.
        return compile(tree, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:  # found by the compiler, not the parser: duplicate argument...
        problem = RestrictedProblem(exc.msg, exc.lineno, exc.offset, SYNTAX_ERROR)
    except (ValueError, RecursionError, MemoryError) as exc:
        problem = RestrictedProblem(f"cannot compile the source: {exc}", None, None, SYNTAX_ERROR)
    raise RestrictedCompileError([problem])


# --- Run-time guards ------------------------------------------------------------------------

_FORMAT_ATTRIBUTES = frozenset({"format", "format_map"})
_WRITABLE_TYPES: tuple[type, ...] = (dict, list, set)


_MISSING = object()
_safer_getattr: Callable[..., Any] = safer_getattr


def _guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
    """``_getattr_`` and the ``getattr`` builtin: RestrictedPython's ``safer_getattr``
    (raising ``AttributeError`` like the builtin when there is no default), with a
    guarded ``str.format`` and no modules outside the import allowlist."""
    if isinstance(obj, str) and name in _FORMAT_ATTRIBUTES:
        return _SafeFormatter(obj).bound(name)
    if isinstance(obj, types.ModuleType):
        reason = contract.denied_attribute(obj.__name__, name)
        if reason is not None:
            where = f"{obj.__name__}.{name}"
            raise AttributeError(f"{where} is not available to restricted checks: {reason}")
    value = _safer_getattr(obj, name, default[0] if default else _MISSING)
    if value is _MISSING:
        return getattr(obj, name)  # the name passed the guard: raise the builtin's error
    if isinstance(value, types.ModuleType) and not contract.import_allowed(value.__name__):
        raise AttributeError(
            f"module {value.__name__!r} is not available to restricted checks (reached as {name!r})"
        )
    return value


class _SafeFormatter(string.Formatter):
    """``str.format`` whose field lookups (``{0.attr}``, ``{0[key]}``) go through the guards."""

    def __init__(self, template: str) -> None:
        self.template = template

    def bound(self, name: str) -> Callable[..., str]:
        if name == "format":
            return lambda *args, **kwargs: self.vformat(self.template, args, kwargs)
        return lambda mapping: self.vformat(self.template, (), mapping)

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, Any]:
        first, rest = _formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attr, key in rest:
            obj = _guarded_getattr(obj, key) if is_attr else default_guarded_getitem(obj, key)
        return obj, first


def _formatter_field_name_split(field_name: str) -> tuple[Any, Iterable[tuple[bool, Any]]]:
    return _string.formatter_field_name_split(field_name)  # type: ignore[no-any-return]


def _own(obj: Any, module_name: str) -> bool:
    """Whether ``obj`` is a class the check defined, or an instance of one."""
    cls = obj if isinstance(obj, type) else type(obj)
    return getattr(cls, "__module__", None) == module_name


def _make_write_guard(module_name: str) -> Callable[[Any], Any]:
    def guard(obj: Any) -> Any:
        if isinstance(obj, _WRITABLE_TYPES) or _own(obj, module_name):
            return obj
        raise TypeError(
            f"a restricted check cannot change a {type(obj).__name__} object "
            "(only its own objects, dicts, lists and sets)"
        )

    return guard


def _make_setattr(write_guard: Callable[[Any], Any]) -> Callable[[Any, str, Any], None]:
    def guarded_setattr(obj: Any, name: str, value: Any) -> None:
        _check_public(name)
        setattr(write_guard(obj), name, value)

    return guarded_setattr


def _make_delattr(write_guard: Callable[[Any], Any]) -> Callable[[Any, str], None]:
    def guarded_delattr(obj: Any, name: str) -> None:
        _check_public(name)
        delattr(write_guard(obj), name)

    return guarded_delattr


def _check_public(name: Any) -> None:
    if not isinstance(name, str):
        raise TypeError("attribute name must be a string")
    if name.startswith("_"):
        raise AttributeError(f'"{name}" is an invalid attribute name because it starts with "_"')


def _guarded_hasattr(obj: Any, name: str) -> bool:
    try:
        _guarded_getattr(obj, name)
    except AttributeError:
        return False
    return True


def _guarded_type(*args: Any) -> type:
    if len(args) != 1:
        raise TypeError("a restricted check may call type() with one argument only")
    return type(args[0])


_INPLACE: Mapping[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "^=": operator.ixor,
    "|=": operator.ior,
    "@=": operator.imatmul,
}


def _inplacevar(op: str, target: Any, value: Any) -> Any:
    try:
        return _INPLACE[op](target, value)
    except KeyError:
        raise SyntaxError(f"augmented assignment {op!r} is not supported") from None


def _apply(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)


class _Printer:
    """``_print_``: ``print`` writes to the current ``sys.stdout`` (the harness captures
    it per row) and ``printed`` returns what this scope printed."""

    def __init__(self, _getattr_: Any = None) -> None:
        self.parts: list[str] = []
        self._getattr_ = _getattr_

    def write(self, text: str) -> None:
        self.parts.append(text)
        sys.stdout.write(text)

    def __call__(self) -> str:
        return "".join(self.parts)

    def _call_print(self, *objects: Any, **kwargs: Any) -> None:
        if kwargs.get("file") is None:
            kwargs["file"] = self
        elif self._getattr_ is not None:
            self._getattr_(kwargs["file"], "write")
        print(*objects, **kwargs)


def _check_modules() -> dict[str, types.ModuleType]:
    """``engine.checks`` and ``okareo.checks``: the real ones, or ``engine.checks`` for both
    where the Okareo shim is not installed (on the host)."""
    engine_checks = importlib.import_module("engine.checks")
    try:
        okareo_checks = importlib.import_module("okareo.checks")
    except ImportError:
        okareo_checks = engine_checks
    return {"engine.checks": engine_checks, "okareo.checks": okareo_checks}


def _make_import(module_name: str) -> Callable[..., types.ModuleType]:
    def guarded_import(
        name: str,
        globals: Mapping[str, Any] | None = None,
        locals: Mapping[str, Any] | None = None,
        fromlist: Iterable[str] | None = (),
        level: int = 0,
    ) -> types.ModuleType:
        if level != 0:
            raise ImportError("relative imports are not available to restricted checks")
        names = tuple(fromlist or ())
        allowed = contract.import_allowed(name) or (
            bool(names) and all(contract.import_allowed(f"{name}.{item}") for item in names)
        )
        if not allowed:
            raise ImportError(
                f"import of {name!r} is not allowed in a restricted check; allowed: "
                + ", ".join(sorted(contract.RESTRICTED_IMPORT_ALLOWLIST))
            )
        for item in names:
            if not isinstance(item, str) or item.startswith("_") or item == "*":
                raise ImportError(f"cannot import {item!r} from {name!r} in a restricted check")
        reasons = [contract.denied_module(name)]
        reasons += [contract.denied_attribute(name, item) for item in names]
        reason = next((r for r in reasons if r is not None), None)
        if reason is not None:
            raise ImportError(f"cannot import that from {name!r} in a restricted check: {reason}")
        special = _check_modules()
        if name in special:
            return special[name] if names else _package_of(name, special[name])
        if names and name in {"engine", "okareo"}:
            package = types.ModuleType(name)
            for item in names:
                setattr(package, item, special[f"{name}.{item}"])
            return package
        module = importlib.import_module(name)
        if names:
            return module
        return importlib.import_module(name.split(".", maxsplit=1)[0])

    return guarded_import


def _package_of(dotted: str, leaf: types.ModuleType) -> types.ModuleType:
    """A stand-in top-level package exposing only ``leaf`` (``import okareo.checks``)."""
    top, _, child = dotted.partition(".")
    package = types.ModuleType(top)
    setattr(package, child, leaf)
    return package


def restricted_globals(module_name: str = CHECK_MODULE) -> dict[str, Any]:
    """A fresh global namespace for a restricted check: guarded builtins and hooks."""
    write_guard = _make_write_guard(module_name)
    names: dict[str, Any] = dict(safe_builtins)
    for name in contract.RESTRICTED_EXTRA_BUILTINS:
        names[name] = getattr(builtins, name)
    names.update(
        {
            "getattr": _guarded_getattr,
            "hasattr": _guarded_hasattr,
            "setattr": _make_setattr(write_guard),
            "delattr": _make_delattr(write_guard),
            "type": _guarded_type,
            "__import__": _make_import(module_name),
            "_getattr_": _guarded_getattr,
        }
    )
    for name in contract.RESTRICTED_FORBIDDEN_BUILTINS:
        if name != "__import__":
            names.pop(name, None)
    namespace: dict[str, Any] = {
        "__builtins__": names,
        "__name__": module_name,
        "__metaclass__": type,
        "_getattr_": _guarded_getattr,
        "_getitem_": default_guarded_getitem,
        "_getiter_": default_guarded_getiter,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_write_": write_guard,
        "_inplacevar_": _inplacevar,
        "_apply_": _apply,
        "_print_": _Printer,
    }
    namespace.update(contract.check_prelude())
    return namespace


def exec_restricted(
    source: str, filename: str = "<check>", module_name: str = CHECK_MODULE
) -> dict[str, Any]:
    """Compile ``source`` under the restricted policy and execute it as module ``module_name``
    (registered in ``sys.modules``, as the harness does for standard checks, so that
    ``dataclasses`` and ``typing`` can resolve it); return the module's namespace.

    Raises :class:`RestrictedCompileError` when it does not compile; whatever the
    module raises while executing propagates unchanged.
    """
    code = compile_restricted_check(source, filename)
    module = types.ModuleType(module_name)
    module.__file__ = filename
    namespace = module.__dict__
    namespace.update(restricted_globals(module_name))
    sys.modules[module_name] = module
    # bandit B102: runs only inside the sandbox container (the harness); the host never calls it
    exec(code, namespace)  # nosec B102
    return namespace
