"""The names suites, the CLI and the exports share are defined once (engine.names)."""

from __future__ import annotations

import ast
from pathlib import Path

import engine
from engine import names
from engine.contract import Status
from engine.suites import file

SHARED = ("SUITE_FILE", "BUILTIN_PREFIX", "DEFAULT_FAIL_ON")


def _definitions(names: tuple[str, ...]) -> dict[str, list[str]]:
    """For each of ``names``, the modules of engine/ that assign it at their top level
    (each module parsed once)."""
    root = Path(engine.__file__).parent
    found: dict[str, list[str]] = {name: [] for name in names}
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if not any(name in source for name in names):
            continue  # no mention of any of them, so no assignment: not worth a parse
        tree = ast.parse(source)
        for node in tree.body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            for name in names:
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    found[name].append(path.relative_to(root.parent).as_posix())
    return found


def test_each_shared_name_is_defined_once() -> None:
    found = _definitions(SHARED)
    for name in SHARED:
        assert found[name] == ["engine/names.py"], name


def test_default_fail_on_is_statuses_and_a_suite_defaults_to_them() -> None:
    assert {Status(s) for s in names.DEFAULT_FAIL_ON} == {
        Status.ERROR,
        Status.INVALID_SCORE,
        Status.JUDGE_ERROR,
        Status.SANDBOX_ERROR,
    }
    suite = file.parse_suite("data: rows.jsonl\nchecks: [is_json]\n")
    assert suite.fail_on == [Status(s) for s in names.DEFAULT_FAIL_ON]
    assert all(isinstance(s, Status) for s in suite.fail_on)
