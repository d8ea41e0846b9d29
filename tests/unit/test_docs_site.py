"""The README is a short front door; the docs site (mkdocs.yml, docs/) has every page in
its navigation, and its generated references come from the code they describe.

(`mkdocs build --strict`, in `scripts/dev.sh lint`, catches broken links and anchors;
these tests say the rest without building the site.)"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from engine.models import Limits
from engine.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: "issue #12", "issue 27", "(#12)": readers have no access to an issue tracker.
ISSUE_REFERENCE = re.compile(r"\bissues? #?\d+|\(#\d+\)|\bpre-#\d+", re.IGNORECASE)
#: In code, tests and bench also the tracker's other words: "finding 7", "findings 6, 8",
#: "finding §4", "round 2", "wave 3", "(§4)". (Not "issue" alone: validation issues are
#: the code's own word; not "round(" or "rounds=": the Python words.)
TRACKER_WORDS = re.compile(
    ISSUE_REFERENCE.pattern + r"|\bfindings? (?:§|\d)|\b(?:round|wave)s? \d+\b|\(§\d",
    re.IGNORECASE,
)
#: The trees the code's readers read, and the files in them that are read as text.
CODE_TREES = ("engine", "generator", "tests", "bench", "scripts")
CODE_SUFFIXES = {".py", ".js", ".sh", ".html", ".css", ".toml", ".yaml", ".yml", ".md", ".txt"}
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "mkdocs_hooks", ROOT / "scripts" / "mkdocs_hooks.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_pages(entries: Any) -> list[str]:
    pages: list[str] = []
    for entry in entries:
        if isinstance(entry, str):
            pages.append(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                pages += [value] if isinstance(value, str) else _nav_pages(value)
    return pages


def _config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return config


def test_the_readme_is_short_and_names_no_issue() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 220
    assert ISSUE_REFERENCE.findall(text) == []


def test_the_readme_keeps_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert (
        "scripts/dev.sh demo     # the main job: scores examples/rows.jsonl with the example checks"
        in text
    )
    assert "scripts/dev.sh test     # the lint gate, then the whole test suite" in text


def test_the_readmes_links_lead_somewhere() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(text) if "://" not in t]
    assert targets
    assert [t for t in targets if not (ROOT / t).exists()] == []


def test_no_code_test_or_bench_file_names_the_tracker() -> None:
    """The code's comments say what the code does and the tests what they hold; a tracker's
    numbers mean nothing to their readers. This file and the docs hook that strips issue
    numbers from included text name them on purpose, as patterns."""
    allowed = {Path(__file__).resolve(), ROOT / "scripts" / "mkdocs_hooks.py"}
    found: dict[str, list[str]] = {}
    for tree in CODE_TREES:
        for folder, dirs, files in os.walk(ROOT / tree):
            # hidden folders (virtualenvs such as bench/.venv-*) and caches hold others' code
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
            for name in files:
                path = Path(folder) / name
                if path.suffix not in CODE_SUFFIXES or path.resolve() in allowed:
                    continue
                text = path.read_text(encoding="utf-8", errors="replace")
                for number, line in enumerate(text.splitlines(), start=1):
                    if TRACKER_WORDS.search(line):
                        where = str(path.relative_to(ROOT))
                        found.setdefault(where, []).append(f"{number}: {line}")
    assert found == {}


def test_the_tracker_pattern_is_precise() -> None:
    named = ("(issue 27)", "Issue 11, finding 8", "findings 7 and 8", "finding §4", "round 2",
             "wave 3", "(#12)", "(§4)")  # fmt: skip
    assert [n for n in named if not TRACKER_WORDS.search(n)] == []
    words = ("report.issues", "for issue in issues", "round(x, 2)", "rounds=20", "class Finding:",
             "a call finding nothing", "issue.line 3", "around 5 s")  # fmt: skip
    assert [w for w in words if TRACKER_WORDS.search(w)] == []


def test_the_source_layout_names_every_folder() -> None:
    """docs/operating/layout.md names each top-level folder and each test suite's folder."""
    text = (DOCS / "operating" / "layout.md").read_text(encoding="utf-8")
    named = set(re.findall(r"^([\w.-]+)/ ", text, re.MULTILINE))
    # what git ignores (build output, caches, virtualenvs) is no part of the layout
    ignored = [
        line.strip().strip("/")
        for line in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    folders = {
        p.name
        for p in ROOT.iterdir()
        if p.is_dir()
        and p.name != ".git"
        and not any(fnmatch.fnmatch(p.name, pattern) for pattern in ignored)
    }
    assert folders - named == set()
    suites = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and p.name != "__pycache__"}
    tests_block = text[text.index("\ntests/") : text.index("\nbench/")]
    assert [s for s in sorted(suites) if not re.search(rf"\b{s}\b", tests_block)] == []


def test_no_page_of_the_site_names_an_issue() -> None:
    found = {
        str(page.relative_to(ROOT)): ISSUE_REFERENCE.findall(page.read_text(encoding="utf-8"))
        for page in DOCS.rglob("*.md")
    }
    assert {page: refs for page, refs in found.items() if refs} == {}


def test_every_page_is_in_the_navigation_and_every_entry_exists() -> None:
    nav = _nav_pages(_config()["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(set(nav)) == pages
    assert len(nav) == len(set(nav)), "a page is in the navigation twice"


def test_the_build_needs_no_network() -> None:
    config = _config()
    assert config["theme"]["font"] is False  # no Google Fonts link
    plugins = [p if isinstance(p, str) else next(iter(p)) for p in config["plugins"]]
    assert plugins == ["search"]


def test_the_cli_reference_is_generated_from_the_click_group() -> None:
    text = (DOCS / "running" / "cli-reference.md").read_text(encoding="utf-8")
    assert "::: mkdocs-click\n    :module: engine.cli\n    :command: main\n" in text
    assert "mkdocs-click" in _config()["markdown_extensions"]


def test_the_settings_table_has_every_setting_with_what_it_does() -> None:
    hooks = _hooks()
    page = (DOCS / "operating" / "configuration.md").read_text(encoding="utf-8")
    assert hooks.SETTINGS_MARKER in page
    rows = hooks.settings_rows()
    names = [name for name in Settings.model_fields if name != "limits"] + list(Limits.model_fields)
    assert len(rows) == len(names)
    described = {variables.split("`")[1]: what for variables, _kind, _default, what in rows}
    assert set(described) == {f"SCOREBOX_{name.upper()}" for name in names}
    assert [variable for variable, what in described.items() if not what] == []
    table = hooks.settings_table()
    assert table.count("\n") == len(rows) + 2


def test_the_api_reference_has_every_operation() -> None:
    hooks = _hooks()
    assert hooks.OPENAPI_MARKER in (DOCS / "service" / "api-reference.md").read_text(
        encoding="utf-8"
    )
    document = hooks.openapi_document()
    text = hooks.openapi_markdown(document)
    for path, item in document["paths"].items():
        for method in item:
            if method in {"get", "post", "put", "patch", "delete"}:
                assert f"### `{method.upper()} {path}`" in text


def test_the_benchmark_pages_include_bench_results_without_issue_numbers() -> None:
    hooks = _hooks()
    markers = hooks.BENCH_MARKER.findall(
        (DOCS / "benchmarks" / "index.md").read_text(encoding="utf-8")
    )
    assert ("latest.md", "2") in markers
    text = hooks.bench_markdown("latest.md", 2)
    assert ISSUE_REFERENCE.findall(text) == []
    assert text.startswith("## ")
