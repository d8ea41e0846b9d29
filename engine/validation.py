"""Static validation of a check's source: ``validate(source, policy, declared)``.

Pure: the source is parsed and compiled with ``ast``/``compile`` (never executed),
and every rule comes from :mod:`engine.contract` (and, for the ``restricted``
policy, :mod:`engine.restricted`, which runs RestrictedPython's own policy).
``validate`` never raises on a user's mistake: each one is an :class:`Issue`
with a stable code from :data:`ISSUE_CODES`, a message that says how to fix it,
and a 1-based line and column. Decisions are explained in ``docs/validation.md``.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import gc
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine import contract, restricted
from engine.contract import OutputType, Policy

Severity = Literal["error", "warning"]
EntrypointKind = Literal["function", "class"]
MethodKind = Literal["staticmethod", "classmethod", "method", "function"]


@dataclass(frozen=True)
class CodeInfo:
    """The fixed severity of an issue code and what it means."""

    severity: Severity
    meaning: str


#: Every issue code ``validate`` reports, with its severity and a one-line meaning.
ISSUE_CODES: Mapping[str, CodeInfo] = {
    "source-too-large": CodeInfo("error", "the source is larger than 256 KiB"),
    "syntax-error": CodeInfo("error", "Python cannot parse or compile the source"),
    "syntax-warning": CodeInfo("warning", "Python warns about the source (invalid escape...)"),
    "no-entrypoint": CodeInfo("error", "no `evaluate` function and no class `Check` with one"),
    "unsupported-entrypoint": CodeInfo("error", "evaluate/Check is not a plain def/class"),
    "ambiguous-entrypoint": CodeInfo("warning", "both Check.evaluate and evaluate: class wins"),
    "entrypoint-redefined": CodeInfo("warning", "evaluate or Check is defined more than once"),
    "unexpected-base-class": CodeInfo("warning", "Check derives from an unknown class"),
    "unknown-decorator": CodeInfo("warning", "evaluate has a decorator scorebox cannot follow"),
    "missing-self": CodeInfo("error", "a plain-method evaluate lacks `self` (add @staticmethod)"),
    "check-not-instantiable": CodeInfo("error", "Check() needs arguments, evaluate needs self"),
    "unknown-parameter": CodeInfo("error", "evaluate takes a parameter scorebox cannot pass"),
    "duplicate-parameter": CodeInfo("error", "evaluate names the same parameter twice"),
    "var-positional": CodeInfo("error", "evaluate takes *args; arguments are passed by name"),
    "positional-only-parameter": CodeInfo("error", "a contract parameter before `/`"),
    "bad-return-annotation": CodeInfo("error", "the return annotation can never be a score"),
    "optional-return": CodeInfo("warning", "the return annotation admits None"),
    "output-type-mismatch": CodeInfo("error", "declared output_data_type contradicts annotation"),
    "requires-mismatch": CodeInfo("error", "declared requires_* contradicts the signature"),
    "undefined-name": CodeInfo("error", "an annotation of evaluate names something undefined"),
    "unknown-import-name": CodeInfo("error", "name not provided by engine.checks/okareo.checks"),
    "relative-import": CodeInfo("error", "a relative import (`from . import x`)"),
    "unusable-import": CodeInfo("warning", "module cannot work in the sandbox (network...)"),
    "unavailable-import": CodeInfo("warning", "module is not installed in the sandbox"),
    "import-not-allowed": CodeInfo("error", "restricted: import outside the allowlist"),
    "forbidden-builtin": CodeInfo("error", "restricted: eval/exec/open/compile/globals..."),
    "private-name": CodeInfo("error", "restricted: a name starting with `_`"),
    "private-attribute": CodeInfo("error", "restricted: an attribute starting with `_`"),
    "forbidden-attribute": CodeInfo("error", "restricted: yaml.load, numpy.load and the like"),
    "restricted-syntax": CodeInfo("error", "restricted: a construct RestrictedPython forbids"),
}


class Issue(BaseModel):
    """One problem found in a check's source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    severity: Severity
    code: str = Field(description="Stable code, one of ISSUE_CODES.")
    message: str = Field(description="What is wrong and how to fix it.")
    line: int | None = Field(default=None, description="1-based line, when known.")
    col: int | None = Field(default=None, description="1-based character column, when known.")


class DeclaredCheck(BaseModel):
    """What a client declares about a check; each field, when set, must agree with the source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    output_data_type: OutputType | None = None
    requires_scenario_input: bool | None = None
    requires_scenario_result: bool | None = None


class ValidationReport(BaseModel):
    """The outcome of validating a check: issues, and what the check is when it is valid."""

    model_config = ConfigDict(extra="forbid")

    valid: bool
    entrypoint: EntrypointKind | None = None
    method_kind: MethodKind | None = None
    signature: list[str] = Field(default_factory=list, description="Named parameters, in order.")
    var_keyword: bool = Field(default=False, description="evaluate takes **kwargs (gets all).")
    output_data_type: OutputType | None = None
    requires_scenario_input: bool = False
    requires_scenario_result: bool = False
    policy: Policy = Policy.STANDARD
    issues: list[Issue] = Field(default_factory=list)

    @property
    def errors(self) -> list[Issue]:
        """The issues that make the check invalid."""
        return [issue for issue in self.issues if issue.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        """The issues that do not."""
        return [issue for issue in self.issues if issue.severity == "warning"]


def validate(
    source: str,
    policy: Policy | str = "standard",
    declared: DeclaredCheck | Mapping[str, Any] | None = None,
) -> ValidationReport:
    """Validate a check's source under ``policy`` against what the client ``declared``.

    ``declared`` may also be a mapping with :class:`DeclaredCheck`'s fields (None = not
    declared). Raises ``ValueError`` only for an unknown policy or declaration (caller bugs).
    """
    if not isinstance(declared, DeclaredCheck):
        declared = DeclaredCheck.model_validate(dict(declared or {}))
    with _gc_paused():
        return _Validation(source, Policy(policy), declared).run()


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


class _Validation:
    def __init__(self, source: str, policy: Policy, declared: DeclaredCheck) -> None:
        self.source = source
        self.policy = policy
        self.declared = declared
        self.issues: list[Issue] = []
        self._lines: list[str] | None = None
        self.lazy_annotations = False  # `from __future__ import annotations`
        self.report = ValidationReport(valid=False, policy=policy)

    # -- issue helpers

    def add(
        self,
        code: str,
        message: str,
        node: _Node | None = None,
        *,
        line: int | None = None,
        col: int | None = None,
    ) -> None:
        if node is not None:
            line, col = self.position(node)
        # SyntaxError offsets can be 0 (before the first character): keep positions 1-based.
        line = None if line is None else max(line, 1)
        col = None if col is None or line is None else max(col, 1)
        severity = ISSUE_CODES[code].severity
        self.issues.append(Issue(severity=severity, code=code, message=message, line=line, col=col))

    def position(self, node: _Node) -> tuple[int | None, int | None]:
        line: int | None = getattr(node, "lineno", None)
        offset: int | None = getattr(node, "col_offset", None)
        if line is None or offset is None:
            return line, None
        if self._lines is None:
            self._lines = _LINE_SPLIT.split(self.source)
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        return line, contract.char_column(text, offset)

    # -- steps

    def run(self) -> ValidationReport:
        size = len(self.source.encode("utf-8", "surrogatepass"))
        if size > contract.MAX_SOURCE_BYTES:
            self.add(
                "source-too-large",
                f"the source is {size} bytes; a check may be at most "
                f"{contract.MAX_SOURCE_BYTES} bytes (256 KiB): move data out of the file",
            )
            return self.finish()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tree = self.parse()
            if tree is not None:
                self.analyse(tree)
                self.compile(tree)
                if self.policy is Policy.RESTRICTED:
                    self.restricted_policy(tree)  # last: RestrictedPython transforms the tree
        for warning in caught:
            if issubclass(warning.category, SyntaxWarning | DeprecationWarning):
                message = f"{warning.message}; fix it (a raw string r'...' for regex escapes)"
                self.add("syntax-warning", message, line=warning.lineno)
        return self.finish()

    def parse(self) -> ast.Module | None:
        try:
            return ast.parse(self.source, "<check>", "exec")
        except SyntaxError as exc:
            message = f"{exc.msg}: fix the syntax"
            self.add("syntax-error", message, line=exc.lineno, col=exc.offset)
        except (ValueError, UnicodeError) as exc:  # NUL bytes, lone surrogates
            self.add("syntax-error", f"the source cannot be read as Python text: {exc}")
        except (RecursionError, MemoryError):
            self.add("syntax-error", "the source is nested too deeply to parse: flatten it")
        return None

    def compile(self, tree: ast.Module) -> None:
        """Errors only the compiler finds ('return' outside function...), once per line."""
        try:
            compile(tree, "<check>", "exec", dont_inherit=True)
        except SyntaxError as exc:
            if not any(i.severity == "error" and i.line == exc.lineno for i in self.issues):
                self.add("syntax-error", f"{exc.msg}: fix it", line=exc.lineno, col=exc.offset)
        except (ValueError, RecursionError, MemoryError) as exc:
            self.add("syntax-error", f"the source cannot be compiled: {exc}")

    def analyse(self, tree: ast.Module) -> None:
        self.lazy_annotations = any(
            isinstance(s, ast.ImportFrom)
            and s.module == "__future__"
            and any(a.name == "annotations" for a in s.names)
            for s in tree.body
        )
        try:
            facts = self.collect(tree)
            self.entrypoint(tree, facts)
            self.imports(facts)
            if self.policy is Policy.RESTRICTED:
                self.restricted(facts)
        except (RecursionError, MemoryError):
            self.add("syntax-error", "the source is nested too deeply to analyse: flatten it")

    def collect(self, tree: ast.Module) -> _Facts:
        """One iterative pass over every node (no recursion: deep trees are fine)."""
        facts = _Facts()
        bound = facts.bound
        forbidden = contract.RESTRICTED_FORBIDDEN_BUILTINS
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Name):
                if not isinstance(node.ctx, ast.Load):
                    bound.add(node.id)
                elif node.id in forbidden and node.id != "__import__":
                    facts.forbidden_loads.append(node)
                continue  # only its ctx below
            if isinstance(node, ast.Constant):
                continue
            if isinstance(node, ast.Attribute) and node.attr in _DENIED_ATTRIBUTE_NAMES:
                facts.denied_attributes.append(node)
            if isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.Call):
                self.collect_call(node, facts)
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
            for name in node._fields:
                value = getattr(node, name, None)
                if type(value) is list:
                    stack.extend(item for item in value if isinstance(item, ast.AST))
                elif isinstance(value, ast.AST):
                    stack.append(value)
        return facts

    @staticmethod
    def collect_call(node: ast.Call, facts: _Facts) -> None:
        """``getattr(x, "__globals__")`` and friends: a private name the guards refuse."""
        func = node.func
        if isinstance(func, ast.Name) and func.id in _GUARDED_GETATTRS and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and str(name.value).startswith("_"):
                facts.private_getattrs.append(name)

    # -- entrypoint and signature

    def entrypoint(self, tree: ast.Module, facts: _Facts) -> None:
        functions = [s for s in tree.body if _binds(s, contract.ENTRYPOINT_FUNCTION)]
        classes = [s for s in tree.body if _binds(s, contract.ENTRYPOINT_CLASS)]
        self.redefined(functions, contract.ENTRYPOINT_FUNCTION)
        self.redefined(classes, contract.ENTRYPOINT_CLASS)
        function = functions[-1] if functions else None
        cls = classes[-1] if classes else None
        if cls is not None and not isinstance(cls, ast.ClassDef):
            self.add(
                "unsupported-entrypoint",
                "`Check` is not a class defined in this file: define it with `class Check:`",
                cls,
            )
            return
        if cls is not None:
            methods = [s for s in cls.body if _binds(s, contract.ENTRYPOINT_FUNCTION)]
            if methods:
                self.redefined(methods, "Check.evaluate")
                if function is not None:
                    self.add(
                        "ambiguous-entrypoint",
                        f"both class Check (line {cls.lineno}) and a module-level evaluate are "
                        "defined; Check.evaluate is used: remove the one you do not mean",
                        function,
                    )
                self.check_class(cls, facts)
                self.method(methods[-1], cls, facts)
                return
            if function is None:
                self.add(
                    "no-entrypoint",
                    "class Check defines no `evaluate` method (inherited ones are not looked up): "
                    "define `evaluate` in Check, as a @staticmethod",
                    cls,
                )
                return
        if function is None:
            self.add(
                "no-entrypoint",
                "the file has no entrypoint: define a function `evaluate(model_output, ...)` or "
                "a class `Check` with a @staticmethod `evaluate` at the top level of the file",
            )
            return
        self.report.entrypoint = "function"
        self.report.method_kind = "function"
        if not isinstance(function, ast.FunctionDef):
            self.unsupported(function, "evaluate")
            return
        self.signature(function, "function", facts)

    def redefined(self, statements: Sequence[ast.stmt], name: str) -> None:
        if len(statements) > 1:
            lines = ", ".join(str(s.lineno) for s in statements)
            self.add(
                "entrypoint-redefined",
                f"`{name}` is defined {len(statements)} times (lines {lines}); the last one is "
                "used: delete the others",
                statements[-1],
            )

    def unsupported(self, stmt: ast.stmt, name: str) -> None:
        what = "an `async def`" if isinstance(stmt, ast.AsyncFunctionDef) else "not a `def`"
        self.add(
            "unsupported-entrypoint",
            f"`{name}` is {what}: define it with a plain `def {contract.ENTRYPOINT_FUNCTION}(...)`",
            stmt,
        )

    def check_class(self, cls: ast.ClassDef, facts: _Facts) -> None:
        for base in cls.bases:
            name = _final_name(base)
            if name is None or (name not in _CHECK_BASES_OK and name not in facts.classes):
                self.add(
                    "unexpected-base-class",
                    f"Check derives from `{ast.unparse(base)}`; scorebox expects CodeBasedCheck "
                    "(from okareo.checks or engine.checks), BaseCheck or no base class",
                    base,
                )

    def method(self, stmt: ast.stmt, cls: ast.ClassDef, facts: _Facts) -> None:
        self.report.entrypoint = "class"
        if not isinstance(stmt, ast.FunctionDef):
            self.unsupported(stmt, "Check.evaluate")
            return
        kind: MethodKind = "method"
        for decorator in stmt.decorator_list:
            name = _final_name(decorator)
            if name in {"staticmethod", "classmethod"}:
                kind = "staticmethod" if name == "staticmethod" else "classmethod"
            else:
                self.add(
                    "unknown-decorator",
                    f"evaluate is decorated with `@{ast.unparse(decorator)}`, which may change "
                    "its signature; scorebox reads the signature as written",
                    decorator,
                )
        self.report.method_kind = kind
        if kind == "method":
            self.instantiable(cls)
        self.signature(stmt, kind, facts)

    def instantiable(self, cls: ast.ClassDef) -> None:
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                args = stmt.args
                positional = [*args.posonlyargs, *args.args][1:]
                required = len(positional) - len(args.defaults)
                required += sum(d is None for d in args.kw_defaults)
                if required > 0:
                    self.add(
                        "check-not-instantiable",
                        "evaluate is a plain method, so scorebox calls `Check()` without "
                        "arguments, but Check.__init__ requires some: give them defaults or make "
                        "evaluate a @staticmethod",
                        stmt,
                    )

    def signature(self, fn: ast.FunctionDef, kind: MethodKind, facts: _Facts) -> None:
        args = fn.args
        positional = [*args.posonlyargs, *args.args]
        n_defaults = len(args.defaults)
        has_default = {a.arg: i >= len(positional) - n_defaults for i, a in enumerate(positional)}
        has_default.update(
            {a.arg: d is not None for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)}
        )
        skip_first = False
        if kind in {"method", "classmethod"}:
            first = positional[0] if positional else None
            receiver = "the Check instance" if kind == "method" else "the Check class"
            if first is None and args.vararg is None:
                self.add(
                    "missing-self",
                    f"evaluate is a {kind} but takes no parameter to receive {receiver}: add "
                    "@staticmethod above it (as in Okareo's examples) or take `self` first",
                    fn,
                )
            elif first is not None and first.arg in contract.PARAMETER_NAMES:
                self.add(
                    "missing-self",
                    f"evaluate is a {kind}, so its first parameter `{first.arg}` would receive "
                    f"{receiver}, not the row: add @staticmethod above it (as in Okareo's "
                    "examples) or take `self` first",
                    first,
                )
            else:
                skip_first = first is not None
        names: list[str] = []
        posonly = {id(a) for a in args.posonlyargs}
        params = positional[1:] if skip_first else positional
        for arg in [*params, *args.kwonlyargs]:
            name = arg.arg
            if name not in contract.PARAMETER_NAMES:
                if not has_default.get(name, False):
                    self.unknown_parameter(arg)
                continue
            if name in names:
                self.add(
                    "duplicate-parameter",
                    f"`{name}` is named twice: remove the second one",
                    arg,
                )
                continue
            if id(arg) in posonly:
                self.add(
                    "positional-only-parameter",
                    f"`{name}` comes before `/`, but scorebox passes arguments by name: "
                    "remove the `/`",
                    arg,
                )
            names.append(name)
        if args.vararg is not None:
            self.add(
                "var-positional",
                f"`*{args.vararg.arg}` is not supported: arguments are passed by name; name the "
                f"parameters you need ({_PARAMS}) or take `**kwargs` to receive them all",
                args.vararg,
            )
        self.report.signature = names
        self.report.var_keyword = args.kwarg is not None
        if not facts.star_import:
            self.annotation_names(fn, facts)
        self.output_type(fn)
        self.requires(fn)

    def unknown_parameter(self, arg: ast.arg) -> None:
        suggestion = contract.suggest_parameter(arg.arg)
        hint = f" (did you mean `{suggestion}`?)" if suggestion else ""
        self.add(
            "unknown-parameter",
            f"`{arg.arg}` is not a parameter scorebox can pass{hint}: evaluate may take any of "
            f"{_PARAMS}, bound by name (a helper parameter needs a default value)",
            arg,
        )

    def annotation_names(self, fn: ast.FunctionDef, facts: _Facts) -> None:
        """Annotations run when ``def`` runs: an undefined name there stops the check loading."""
        if self.lazy_annotations:
            return
        args = fn.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        annotations = [a.annotation for a in every if a is not None and a.annotation is not None]
        if fn.returns is not None:
            annotations.append(fn.returns)
        known = facts.bound | _BUILTIN_NAMES | set(contract.PRELUDE_TYPING_NAMES)
        reported: set[str] = set()
        for annotation in annotations:
            for node in ast.walk(annotation):
                if isinstance(node, ast.Name) and node.id not in known and node.id not in reported:
                    reported.add(node.id)
                    self.add(
                        "undefined-name",
                        f"`{node.id}` in evaluate's annotations is never defined or imported, "
                        "so the check fails to load: import it (e.g. `from typing import ...`)",
                        node,
                    )

    def output_type(self, fn: ast.FunctionDef) -> None:
        declared = self.declared.output_data_type
        annotated: OutputType | None = None
        if fn.returns is not None:
            members = _annotation_members(fn.returns)
            for node, what in members.bad:
                self.add(
                    "bad-return-annotation",
                    f"evaluate is annotated to return {what}, which is not a score: {_FIX_RETURN}",
                    node,
                )
            if members.none and not members.bad:
                if members.scores or members.opaque:
                    self.add(
                        "optional-return",
                        "the return annotation admits None, and returning None is an "
                        "invalid_score at run time: always return a score",
                        fn.returns,
                    )
                else:
                    self.add(
                        "bad-return-annotation",
                        f"evaluate is annotated to return None: {_FIX_RETURN}",
                        fn.returns,
                    )
            if not members.opaque and not members.bad:
                if len(members.scores) == 1:
                    annotated = next(iter(members.scores))
                elif members.scores == {OutputType.INT, OutputType.FLOAT}:
                    annotated = OutputType.FLOAT  # ints are widened to float
        if (
            declared is not None
            and annotated is not None
            and declared is not annotated
            and not (declared is OutputType.FLOAT and annotated is OutputType.INT)
        ):
            self.add(
                "output-type-mismatch",
                f"evaluate is annotated to return {annotated.value} but output_data_type is "
                f"declared {declared.value}: change the annotation or the declaration",
                fn.returns or fn,
            )
            annotated = None
        self.report.output_data_type = declared or annotated

    def requires(self, fn: ast.FunctionDef) -> None:
        for name in contract.REQUIRABLE_PARAMETERS:
            field_name = f"requires_{name}"
            implied = name in self.report.signature
            value: bool | None = getattr(self.declared, field_name)
            if value is None or value == implied:
                setattr(self.report, field_name, implied)
                continue
            if value and self.report.var_keyword:  # read from **kwargs: declared wins
                setattr(self.report, field_name, True)
                continue
            setattr(self.report, field_name, implied)
            if value:
                message = (
                    f"{field_name} is declared true but evaluate does not take `{name}`: add the "
                    f"parameter, or declare {field_name} false"
                )
            else:
                message = (
                    f"{field_name} is declared false but evaluate takes `{name}`, so rows "
                    f"without it are skipped: declare it true, or remove the parameter"
                )
            self.add("requires-mismatch", message, fn)

    # -- imports and policy

    def imports(self, facts: _Facts) -> None:
        for node in facts.imports:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.import_(alias.name, (), alias)
                continue
            if node.level:
                self.add(
                    "relative-import",
                    "a check is a single file, so relative imports cannot work: import from the "
                    "package by name or move the code into the check",
                    node,
                )
                continue
            module = node.module or ""
            names = [a.name for a in node.names if a.name != "*"]
            exports = contract.CHECK_MODULE_EXPORTS.get(module)
            if exports is not None:
                for alias in node.names:
                    if alias.name != "*" and alias.name not in exports:
                        self.add(
                            "unknown-import-name",
                            f"`{module}` has no `{alias.name}`: import any of "
                            f"{', '.join(sorted(exports))}",
                            alias,
                        )
            self.import_(module, names, node)

    def import_(self, module: str, names: Iterable[str], node: _Node) -> None:
        dotted = [f"{module}.{name}" for name in names]
        if self.policy is Policy.RESTRICTED:
            if not contract.import_allowed(module) and not (
                dotted and all(contract.import_allowed(d) for d in dotted)
            ):
                self.add(
                    "import-not-allowed",
                    f"a restricted check cannot import `{module}`: use only "
                    f"{', '.join(sorted(contract.RESTRICTED_IMPORT_ALLOWLIST))}",
                    node,
                )
                return
            for name in (module, *dotted):
                reason = contract.denied_module(name)
                if reason is not None:
                    self.add("forbidden-attribute", f"`{name}` is not available: {reason}", node)
            return
        for candidate in (module, *dotted):
            reason = contract.unusable_reason(candidate)
            if reason is not None:
                self.add(
                    "unusable-import",
                    f"`{candidate}` imports, but {reason}: calls through it will fail at run time",
                    node,
                )
                return
        if not contract.sandbox_can_import(module):
            available = ", ".join(p.import_name for p in contract.SANDBOX_PACKAGES)
            self.add(
                "unavailable-import",
                f"`{module}` is not installed in the sandbox, so the check fails to load unless "
                f"the import is guarded by try/except ImportError: use the standard library or "
                f"{available}",
                node,
            )

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

    # -- result

    def finish(self) -> ValidationReport:
        seen: set[tuple[str, int | None, int | None]] = set()
        issues: list[Issue] = []
        for issue in sorted(self.issues, key=lambda i: (i.line or 0, i.col or 0)):
            key = (issue.code, issue.line, issue.col)
            if key not in seen:
                seen.add(key)
                issues.append(issue)
        self.report.issues = issues
        self.report.valid = not any(issue.severity == "error" for issue in issues)
        return self.report


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
    if name in contract.ANNOTATION_OUTPUT_TYPES:
        return _Members(scores={contract.ANNOTATION_OUTPUT_TYPES[name]})
    if name == "None":
        return _Members(none=True)
    if name in contract.NON_SCORE_ANNOTATIONS:
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
    if base in contract.NON_SCORE_ANNOTATIONS:
        return _Members(bad=[(node, f"`{ast.unparse(node)}`")])
    return _Members(opaque=True)
