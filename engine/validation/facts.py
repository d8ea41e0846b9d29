"""What the validator collects from a check's tree, and the pure helpers it reads it with."""

from __future__ import annotations

import ast
import builtins
import contextlib
import gc
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from engine import contract
from engine.contract import OutputType
from engine.validation import rules as check_rules


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large tree is built and walked.

    A 256 KiB check is ~80,000 AST nodes; the collections their allocation triggers
    cost about a third of the time and free nothing (the tree is acyclic and short-lived).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# --- Implementation ---------------------------------------------------------------------------

_LINE_SPLIT = re.compile(r"\r\n|\r|\n")
_BUILTIN_NAMES = frozenset(dir(builtins))
_GUARDED_GETATTRS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
_DENIED_ATTRIBUTE_NAMES = frozenset(
    name for names in contract.RESTRICTED_DENIED_ATTRIBUTES.values() for name in names
)
_CHECK_BASES_OK = contract.CHECK_BASE_CLASSES | {"object", "ABC"}
_PARAMS = ", ".join(contract.PARAMETER_NAMES)
_FIX_RETURN = "return a bool, int, float, CheckResponse or (score, explanation) tuple"
_RESTRICTED_HINTS: Mapping[str, str] = {
    "private-name": "rename it; names starting with `_` are reserved in restricted checks "
    '(drop any `if __name__ == "__main__":` block)',
    "private-attribute": "restricted checks cannot reach private or internal attributes",
    "forbidden-builtin": "restricted checks cannot run code from strings",
    "restricted-syntax": "rewrite it without this construct (see docs/validation.md)",
}
_AUGMENTED_ITEM_HINT = "write `x[k] = x[k] + 1` instead of `x[k] += 1`"

_Node = ast.AST


@dataclass
class _Facts:
    """What one walk over the whole tree learns."""

    bound: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    imports: list[ast.Import | ast.ImportFrom] = field(default_factory=list)
    forbidden_loads: list[ast.Name] = field(default_factory=list)
    private_getattrs: list[ast.Constant] = field(default_factory=list)
    denied_attributes: list[ast.Attribute] = field(default_factory=list)  # candidates
    star_import: bool = False


def collect_facts(tree: ast.Module) -> _Facts:
    """One iterative pass over every node (no recursion: deep trees are fine)."""
    facts = _Facts()
    bound = facts.bound
    forbidden = contract.RESTRICTED_FORBIDDEN_BUILTINS
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):  # the most common node: kept inline
            if not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
            elif node.id in forbidden and node.id != "__import__":
                facts.forbidden_loads.append(node)
            continue  # only its ctx below
        if isinstance(node, ast.Constant):
            continue
        _note(node, facts)
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                stack.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return facts


def _note(node: ast.AST, facts: _Facts) -> None:
    """What one node (not a name, not a constant) binds, imports or reaches."""
    bound = facts.bound
    if isinstance(node, ast.Attribute) and node.attr in _DENIED_ATTRIBUTE_NAMES:
        facts.denied_attributes.append(node)
    if isinstance(node, ast.arg):
        bound.add(node.arg)
    elif isinstance(node, ast.Call):
        _note_call(node, facts)
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        bound.add(node.name)
        if isinstance(node, ast.ClassDef):
            facts.classes.add(node.name)
    elif isinstance(node, ast.Import | ast.ImportFrom):
        facts.imports.append(node)
        for alias in node.names:
            if alias.name == "*":
                facts.star_import = True
            else:
                bound.add(alias.asname or alias.name.split(".")[0])
    elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
        bound.add(node.name)


def _note_call(node: ast.Call, facts: _Facts) -> None:
    """``getattr(x, "__globals__")`` and friends: a private name the guards refuse."""
    func = node.func
    if isinstance(func, ast.Name) and func.id in _GUARDED_GETATTRS and len(node.args) >= 2:
        name = node.args[1]
        if isinstance(name, ast.Constant) and str(name.value).startswith("_"):
            facts.private_getattrs.append(name)


@dataclass
class _Members:
    """A return annotation, flattened: score types, None, opaque parts, impossible parts."""

    scores: set[OutputType] = field(default_factory=set)
    none: bool = False
    opaque: bool = False
    bad: list[tuple[_Node, str]] = field(default_factory=list)

    def add(self, other: _Members) -> _Members:
        self.scores |= other.scores
        self.none |= other.none
        self.opaque |= other.opaque
        self.bad.extend(other.bad)
        return self


def _final_name(node: _Node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _final_name(node.func)
    return None


def _binds(stmt: ast.stmt, name: str) -> bool:
    """Whether a top-level statement binds ``name`` in the module namespace."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return stmt.name == name
    if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return any((a.asname or a.name.split(".")[0]) == name for a in stmt.names)
    return False


def _annotation_members(node: _Node) -> _Members:
    """Flatten a return annotation into score types, None, opaque and impossible parts."""
    if isinstance(node, ast.Constant):
        if node.value is None:
            return _Members(none=True)
        if isinstance(node.value, str):
            try:
                parsed = ast.parse(node.value, mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return _Members(opaque=True)
            members = _annotation_members(parsed)
            members.bad = [(node, what) for _, what in members.bad]  # point at the string
            return members
        return _Members(opaque=True)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _annotation_members(node.left).add(_annotation_members(node.right))
    if isinstance(node, ast.Subscript):
        return _subscript_members(node)
    name = _final_name(node)
    if name is None:
        return _Members(opaque=True)
    if name in check_rules.ANNOTATION_OUTPUT_TYPES:
        return _Members(scores={check_rules.ANNOTATION_OUTPUT_TYPES[name]})
    if name == "None":
        return _Members(none=True)
    if name in check_rules.NON_SCORE_ANNOTATIONS:
        return _Members(bad=[(node, f"`{name}`")])
    return _Members(opaque=True)  # CheckResponse, tuple, dict, Any, a user's alias...


def _subscript_members(node: ast.Subscript) -> _Members:
    base = _final_name(node.value)
    elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if base in {"Union", "Optional"}:
        members = _Members(none=base == "Optional")
        for elt in elts:
            members.add(_annotation_members(elt))
        return members
    if base == "Annotated":
        return _annotation_members(elts[0])
    if base in {"tuple", "Tuple"}:
        if len(elts) != 2 or (isinstance(elts[1], ast.Constant) and elts[1].value is ...):
            return _Members(bad=[(node, f"`{ast.unparse(node)}` (a tuple must be 2 items)")])
        first = _annotation_members(elts[0])
        if first.bad or first.none or first.opaque:
            return _Members(bad=first.bad, opaque=not first.bad)
        return first
    if base in check_rules.NON_SCORE_ANNOTATIONS:
        return _Members(bad=[(node, f"`{ast.unparse(node)}`")])
    return _Members(opaque=True)
