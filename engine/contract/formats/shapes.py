"""A check file's top-level functions as their source declares them (from its ``ast``).

Read the same way in the validator (host) and in the harness (sandbox), so both find the
same entry. Carried into the sandbox image (stdlib only).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from engine.contract.params import ENTRYPOINT_CLASS


@dataclass(frozen=True)
class Param:
    """One parameter of a function: its name, whether it has a default, its annotation."""

    name: str
    has_default: bool
    annotation: str = ""


@dataclass(frozen=True)
class FunctionShape:
    """A top-level function of a check file, as its source declares it."""

    name: str
    params: tuple[Param, ...]
    var_keyword: bool = False
    var_positional: bool = False
    decorators: tuple[str, ...] = ()
    line: int = 0
    #: ``async def``: the harness runs the coroutine to completion within the row's limits.
    is_async: bool = False

    @property
    def required(self) -> tuple[str, ...]:
        """The names of the parameters without a default."""
        return tuple(p.name for p in self.params if not p.has_default)


def _dotted_tail(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _annotation(arg: ast.arg) -> str:
    return ast.unparse(arg.annotation) if arg.annotation else ""


def _shape(stmt: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionShape:
    args = stmt.args
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    params = [Param(a.arg, i >= first_default, _annotation(a)) for i, a in enumerate(positional)]
    params += [
        Param(a.arg, d is not None, _annotation(a))
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    return FunctionShape(
        stmt.name,
        tuple(params),
        args.kwarg is not None,
        args.vararg is not None,
        tuple(_dotted_tail(d) for d in stmt.decorator_list),
        stmt.lineno,
        isinstance(stmt, ast.AsyncFunctionDef),
    )


def shapes_of(tree: ast.Module) -> tuple[list[FunctionShape], bool]:
    """The file's top-level functions, and whether it defines a ``Check`` class."""
    shapes: list[FunctionShape] = []
    has_check = False
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == ENTRYPOINT_CLASS:
            has_check = True
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            shapes.append(_shape(stmt))
    return shapes, has_check
