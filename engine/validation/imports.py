"""Rules about a check's imports: what the policy allows, what the sandbox image holds, what
the check declares (PEP 723), network clients, stand-ins of other tools' packages, and
imports guarded by ``except ImportError``."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from engine import contract
from engine.contract import Policy
from engine.environments.spec import DECLARE_HINT, module_names
from engine.validation import rules as check_rules
from engine.validation import stand_ins
from engine.validation.base import _ValidationBase
from engine.validation.facts import _Facts, _final_name, _Node

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


class _ImportRules(_ValidationBase):
    """Each import of the check, judged under its policy."""

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
