"""The validator's steps: parse, analyse (one walk collects the facts, then the entry point,
imports and policy rules read them), compile, then RestrictedPython's policy."""

from __future__ import annotations

import ast
import warnings

from engine.contract import Policy
from engine.environments.spec import read_block
from engine.validation import rules as check_rules
from engine.validation.entrypoint import _EntrypointRules
from engine.validation.facts import collect_facts
from engine.validation.imports import _guarded_imports, _ImportRules
from engine.validation.report import Issue, ValidationReport
from engine.validation.restricted_rules import _RestrictedRules


class _Validation(_EntrypointRules, _ImportRules, _RestrictedRules):
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
            facts = collect_facts(tree)
            self.entrypoint(tree, facts)
            self.imports(facts)
            if self.policy is Policy.RESTRICTED:
                self.restricted(facts)
        except (RecursionError, MemoryError):
            self.add("syntax-error", "the source is nested too deeply to analyse: flatten it")

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
