"""The calibration room is pure: its modules import numpy, the optional scipy and
krippendorff (lazily), the standard library and engine.calibration / engine.errors only;
never storage, the API, the dashboard or the CLI."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOM = Path(__file__).resolve().parents[2] / "engine" / "calibration"
ALLOWED = {"numpy", "scipy", "krippendorff", "engine.calibration", "engine.errors"}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
        elif (  # importlib.import_module("x") in deps.py
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", None) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(str(node.args[0].value))
    return found


def _allowed(module: str) -> bool:
    top = module.split(".", maxsplit=1)[0]
    return (
        top in sys.stdlib_module_names
        or top == "__future__"
        or any(module == a or module.startswith(a + ".") for a in ALLOWED)
    )


def test_the_calibration_room_imports_no_edge() -> None:
    modules = sorted(ROOM.glob("*.py"))
    assert len(modules) >= 10
    bad = {p.name: sorted(m for m in _imports(p) if not _allowed(m)) for p in modules}
    assert {k: v for k, v in bad.items() if v} == {}
