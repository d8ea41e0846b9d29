"""Rules about the entry point: another tool's format, or Okareo's ``evaluate`` function or
``Check`` class (defined once, a plain ``def``, a base scorebox knows, callable as written)."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from engine import contract
from engine.contract import formats
from engine.validation.facts import _CHECK_BASES_OK, _binds, _Facts, _final_name
from engine.validation.report import MethodKind
from engine.validation.signature import _SignatureRules


class _EntrypointRules(_SignatureRules):
    """Finds the entry point, then hands its signature to :class:`_SignatureRules`."""

    def entrypoint(self, tree: ast.Module, facts: _Facts) -> None:
        if self.foreign_format(tree):
            return
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

    def foreign_format(self, tree: ast.Module) -> bool:
        """Another tool's scorer file (engine.contract.formats): its entry and bindings.

        True when the file is not Okareo-shaped (then the Okareo signature rules do not
        apply); False to go on with them.
        """
        shapes, has_check = formats.shapes_of(tree)
        try:
            detected = formats.detect(shapes, has_check, self.entry)
        except formats.FormatError as exc:
            names = (contract.ENTRYPOINT_FUNCTION, contract.ENTRYPOINT_CLASS)
            okareo = any(_binds(s, name) for s in tree.body for name in names)
            if okareo and self.entry is None:
                return False  # the Okareo rules name the defect
            self.add("no-entrypoint", str(exc))
            return True
        if detected.format is formats.Format.OKAREO:
            return False
        shape = detected.shape
        assert shape is not None
        self.report.format = detected.format
        self.report.entry = detected.entry
        self.report.bindings = dict(detected.bindings)
        self.report.entrypoint = "function"
        self.report.method_kind = "function"
        self.report.signature = [p.name for p in shape.params]
        self.report.var_keyword = shape.var_keyword
        return True

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
