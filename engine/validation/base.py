"""The validator's state and how it records an issue at a node."""

from __future__ import annotations

from engine import contract
from engine.contract import Policy
from engine.environments.spec import Declared, PackageRules
from engine.validation.facts import _LINE_SPLIT, _Node
from engine.validation.report import ISSUE_CODES, DeclaredCheck, Issue, ValidationReport


class _ValidationBase:
    def __init__(
        self,
        source: str,
        policy: Policy,
        declared: DeclaredCheck,
        packages: PackageRules | None = None,
    ) -> None:
        self.source = source
        self.packages = packages  # the operator's allow/deny rules (None: allow any)
        self.environment = Declared()  # the PEP 723 block, read in run()
        self.guarded: set[int] = set()  # ids of imports under `except ImportError`
        self.policy = policy
        self.declared = declared
        self.issues: list[Issue] = []
        self._lines: list[str] | None = None
        self.lazy_annotations = False  # `from __future__ import annotations`
        self.report = ValidationReport(valid=False, policy=policy)
        self.entry: str | None = None  # the entry function named at upload

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
