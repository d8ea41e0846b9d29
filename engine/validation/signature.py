"""Rules about the entry point's signature, annotations, output type and declared inputs."""

from __future__ import annotations

import ast

from engine import contract
from engine.contract import OutputType
from engine.validation import rules as check_rules
from engine.validation.base import _ValidationBase
from engine.validation.facts import (
    _BUILTIN_NAMES,
    _FIX_RETURN,
    _PARAMS,
    _annotation_members,
    _Facts,
)
from engine.validation.report import MethodKind


def _own_returns(fn: ast.FunctionDef) -> list[ast.Return]:
    """The ``return`` statements with a value of ``fn`` itself (not of nested functions)."""
    out: list[ast.Return] = []
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda r: (r.lineno, r.col_offset))


def _literal_kind(node: ast.expr | None) -> str | None:
    """``"str"``, ``"bool"``, ``"int"`` or ``"float"`` for a literal return value; None for
    anything else (a name, a call, a tuple, None: other rules cover it)."""
    if isinstance(node, ast.JoinedStr):
        return "str"
    if isinstance(node, ast.Constant) and type(node.value) in (str, bool, int, float):
        return type(node.value).__name__
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _literal_kind(node.operand)
        return inner if inner in ("int", "float") else None
    return None


class _SignatureRules(_ValidationBase):
    """Rules about ``evaluate``'s signature, annotations, output type and declared inputs."""

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
        suggestion = check_rules.suggest_parameter(arg.arg)
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
        self.returned_literals(fn, None if fn.returns is None else annotated)
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

    def returned_literals(self, fn: ast.FunctionDef, annotated: OutputType | None) -> None:
        """Literal ``return`` values that can never score: every return a string (``"PASS"``
        gives invalid_score on every row), or a literal of another type than the return
        annotation's (the harness holds a row to the annotated type)."""
        returns = [(r, _literal_kind(r.value)) for r in _own_returns(fn)]
        if returns and all(kind == "str" for _, kind in returns):
            first = returns[0][0]
            assert first.value is not None
            self.add(
                "string-return",
                f"every `return` of evaluate gives a string (`{ast.unparse(first.value)}`), "
                "which is not a score, so every row gets invalid_score: return True/False, a "
                "number, or (score, explanation)",
                first,
            )
            return
        if annotated is None:
            return
        for node, kind in returns:
            if kind is None or kind == annotated.value:
                continue
            if kind == "int" and annotated is OutputType.FLOAT:
                continue  # widened
            assert node.value is not None
            self.add(
                "return-mismatch",
                f"`return {ast.unparse(node.value)}` contradicts the annotation "
                f"`-> {annotated.value}`: the row gets invalid_score (a {kind} is not a "
                f"{annotated.value}): return a {annotated.value}, or change the annotation",
                node,
            )
            return

    def requires(self, fn: ast.FunctionDef) -> None:
        """``requires_*`` of the report: implied by the signature, or declared (checked)."""
        declared = self.declared
        self.report.requires_scenario_input = self._required(
            "scenario_input", declared.requires_scenario_input, fn
        )
        self.report.requires_scenario_result = self._required(
            "scenario_result", declared.requires_scenario_result, fn
        )

    def _required(self, name: str, value: bool | None, fn: ast.FunctionDef) -> bool:
        field_name = f"requires_{name}"
        implied = name in self.report.signature
        if value is None or value == implied:
            return implied
        if value and self.report.var_keyword:  # read from **kwargs: declared wins
            return True
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
        return implied

    # -- imports and policy
