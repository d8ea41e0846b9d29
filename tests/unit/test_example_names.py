"""The README once pushed examples/checks/conciseness.py, which took the built-in
judge's name for that tenant. No example check, and no check the README or the docs
push, may have a built-in's name (unless it says --name something else)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from engine.builtins import build_builtins

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = set(build_builtins())
PUSH = re.compile(r"scorebox check push [^\n#`]+")
UPLOAD = re.compile(r"-F file=@(\S+)")


def test_example_checks_do_not_have_builtin_names() -> None:
    examples = sorted((ROOT / "examples" / "checks").glob("*.py"))
    assert examples
    assert [p.name for p in examples if p.stem in BUILTINS] == []


def _pushed_names(text: str) -> list[str]:
    names = []
    for match in PUSH.finditer(text):
        args = shlex.split(match.group(0))[3:]
        if not args:
            continue
        name = Path(args[0]).stem
        if "--name" in args[:-1]:
            name = args[args.index("--name") + 1]
        names.append(name)
    for match in UPLOAD.finditer(text):
        names.append(Path(match.group(1)).stem)
    return names


def test_documented_pushes_do_not_shadow_builtins() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    pushed = {
        str(page.relative_to(ROOT)): _pushed_names(page.read_text(encoding="utf-8"))
        for page in pages
    }
    assert pushed["README.md"], "the README pushes no check any more: update this test"
    assert pushed["docs/service.md"], "the API guide pushes no check any more: update this test"
    shadowing = {page: [n for n in names if n in BUILTINS] for page, names in pushed.items()}
    assert {page: names for page, names in shadowing.items() if names} == {}


def test_the_old_readme_push_would_fail_this_test() -> None:
    assert _pushed_names("scorebox check push examples/checks/conciseness.py") == ["conciseness"]
    assert _pushed_names("scorebox check push x.py --name fluency") == ["fluency"]
