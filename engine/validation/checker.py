"""The validator's steps: parse, compile, find the entry point, imports and policy."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterable, Sequence

from engine import contract
from engine.contract import Policy, formats, restricted
from engine.environments.spec import DECLARE_HINT, module_names, read_block
from engine.validation import rules as check_rules
from engine.validation import stand_ins
from engine.validation.facts import (
    _AUGMENTED_ITEM_HINT,
    _CHECK_BASES_OK,
    _DENIED_ATTRIBUTE_NAMES,
    _GUARDED_GETATTRS,
    _RESTRICTED_HINTS,
    _binds,
    _Facts,
    _final_name,
    _Node,
)
from engine.validation.report import Issue, MethodKind, ValidationReport
from engine.validation.signature import _SignatureRules

_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _guarded_imports(tree: ast.Module) -> set[int]:
    """ids of imports (and their aliases) in a ``try`` whose handler catches ImportError."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try | ast.TryStar):
            continue
        caught: set[str] = set()
        for handler in node.handlers:
            kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught |= {"Exception" if k is None else _final_name(k) or "" for k in kinds}
        if not caught & _IMPORT_ERRORS:
            continue
        for stmt in node.body:
            for inner in ast.walk(stmt):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    guarded.add(id(inner))
                    guarded.update(id(alias) for alias in inner.names)
    return guarded


class _Validation(_SignatureRules):
    """One validation: parse, compile, analyse, then the policy's rules."""

    def run(self) -> ValidationReport:
        size = len(self.source.encode("utf-8", "surrogatepass"))
        if size > check_rules.MAX_SOURCE_BYTES:
            self.add(
                "source-too-large",
                f"the source is {size} bytes; a check may be at most "
                f"{check_rules.MAX_SOURCE_BYTES} bytes (256 KiB): move data out of the file",
            )
            return self.finish()
        self.environment = read_block(self.source, self.packages)
        for problem in self.environment.problems:
            self.add(problem.code, problem.message, line=problem.line, col=problem.col)
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
            self.guarded = _guarded_imports(tree)
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
        client = check_rules.network_client(module)
        if client is not None:
            self.network_import(client, node)
            return
        if self.beyond_stand_in(module, list(names), node):
            return
        for candidate in (module, *dotted):
            reason = check_rules.unusable_reason(candidate)
            if reason is not None:
                self.add(
                    "unusable-import",
                    f"`{candidate}` imports, but {reason}: calls through it will fail at run time",
                    node,
                )
                return
        if not check_rules.sandbox_can_import(module):
            self.unavailable(module, node)

    def beyond_stand_in(self, module: str, names: list[str], node: _Node) -> bool:
        """An import of more of another tool's package than its stand-in holds, undeclared."""
        top = module.split(".", maxsplit=1)[0]
        distribution = stand_ins.distribution_of(module)
        if distribution is None:
            return False
        declared = self.environment.names
        if any(top in module_names(n) or module_names(n) & module_names(distribution)
               for n in declared):  # fmt: skip
            return False  # the real package, declared, replaces the stand-in
        lacking = stand_ins.beyond(module, names)
        if lacking is None:
            return False
        held = ", ".join(sorted(n for n in stand_ins.SURFACES if n.split(".")[0] == top))
        self.add(
            "undeclared-import",
            f"{lacking} is not in the image's stand-in for `{top}`, which holds only the "
            f"types and decorators scorer files use ({held}); the real package is "
            f"`{distribution}`: {DECLARE_HINT.replace('NAME', distribution)}",
            node,
        )
        return True

    def network_import(self, client: str, node: _Node) -> None:
        """A network client library: refused at upload, declared or not."""
        self.add(
            "network-import",
            f"`{client}` is not allowed in a check: the sandbox has no network, so it could "
            "only fail. The only endpoint a check can reach is the model gateway, through "
            f"the model clients in the image ({', '.join(check_rules.GATEWAY_CLIENTS)}; "
            "docs/writing-checks/model-calls.md). A package the check needs is "
            f"{DECLARE_HINT.replace('NAME', 'package-name').replace('declare it', 'declared')}"
            "\nscorebox installs it offline before the check runs; it reaches no network "
            "either.",
            node,
        )

    def unavailable(self, module: str, node: _Node) -> None:
        """A module not in the image: declared, guarded, maybe declared, or refused."""
        top = module.split(".", maxsplit=1)[0]
        declared = self.environment.names
        if any(top in module_names(name) for name in declared):
            return
        available = ", ".join(p.import_name for p in check_rules.SANDBOX_PACKAGES)
        if declared:
            self.add(
                "unavailable-import",
                f"`{top}` is not in the sandbox image and its name matches none of the declared "
                f"packages ({', '.join(sorted(declared))}): fine if one of them provides it, "
                "otherwise add its package to `dependencies`",
                node,
            )
        elif id(node) in self.guarded:
            self.add(
                "unavailable-import",
                f"`{module}` is not installed in the sandbox; the import is guarded by "
                f"try/except ImportError, so the check loads without it",
                node,
            )
        else:
            self.add(
                "undeclared-import",
                f"`{top}` is neither in the sandbox image nor declared, so the import is not "
                f"allowed: {DECLARE_HINT.replace('NAME', top)}\n(scorebox installs declared "
                "packages offline before the check runs; the check itself still reaches no "
                "network: its only endpoint is the model gateway). Or use the standard "
                f"library or {available}",
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
