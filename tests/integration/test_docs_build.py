"""The docs site is built, and a fenced block that did not render fails the build.

Superfences takes no bare word after a fence's language: ```` ```sh runnable ```` used to
come out as a paragraph starting with the fence, its comment lines as headings, and
``mkdocs build --strict`` passed. The hook now turns the marker into a class and checks
every built page for what an unrendered fence leaves behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).parent / "mkdocs"
SESSION = 'cd "$(mktemp -d)"            # a scratch directory\nscorebox --version\n'


def _site(tmp_path: Path, page: str) -> subprocess.CompletedProcess[str]:
    """Build a one-page site with the project's markdown extensions and hook."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(page, encoding="utf-8")
    small = {
        "site_name": "fences",
        "docs_dir": str(docs),
        "strict": True,
        "theme": {"name": "mkdocs"},
        "hooks": [str(ROOT / "scripts" / "mkdocs_hooks.py")],
        "markdown_extensions": [
            e for e in config["markdown_extensions"] if "snippets" not in str(e)
        ],
    }
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(small), encoding="utf-8")
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=tmp_path,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )


def test_a_runnable_session_renders_as_a_code_block(tmp_path: Path) -> None:
    built = _site(tmp_path, f"# Try it\n\n```sh runnable\n{SESSION}```\n")
    assert built.returncode == 0, built.stderr
    html = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    block = re.search(r'<div class="runnable highlight"><pre>.*?<code>(.*?)</code>', html, re.S)
    assert block, html
    assert "scorebox" in block.group(1)
    assert "```" not in html
    assert "<h1" in html and "a scratch directory</h" not in html


@pytest.mark.parametrize(
    "fence, problem",
    [
        ("```sh bogus words", "a literal code fence"),
        ("```sh bogus", "a literal code fence"),
    ],
)
def test_a_fence_that_does_not_render_fails_the_build(
    tmp_path: Path, fence: str, problem: str
) -> None:
    built = _site(tmp_path, f"# Try it\n\n{fence}\n{SESSION}# next step\nls\n```\n")
    assert built.returncode != 0
    assert "index.md: a fenced block did not render" in built.stderr
    assert problem in built.stderr


def test_a_heading_made_of_a_comment_line_fails_the_build(tmp_path: Path) -> None:
    # A fence superfences does not take: its comment lines become headings.
    built = _site(tmp_path, "# Page\n\nText.\n\n~~~~ sh weird\n# install the tool\n")
    assert built.returncode != 0
    assert "a heading made of a comment line of a fenced block: 'install the tool'" in (
        built.stderr
    )


def test_the_docs_site_builds_and_every_runnable_session_renders(tmp_path: Path) -> None:
    built = subprocess.run(
        [str(MKDOCS), "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        check=False,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    first = (tmp_path / "site" / "getting-started" / "first-check" / "index.html").read_text(
        encoding="utf-8"
    )
    assert first.count('<div class="runnable highlight"><pre>') == 1
    sources = [*ROOT.joinpath("docs").rglob("*.md")]
    marked = sum(len(re.findall(r"^```\w+ runnable$", p.read_text(), re.M)) for p in sources)
    rendered = sum(
        p.read_text(encoding="utf-8").count('<div class="runnable highlight"><pre>')
        for p in (tmp_path / "site").rglob("*.html")
    )
    assert marked >= 12
    assert rendered == marked
