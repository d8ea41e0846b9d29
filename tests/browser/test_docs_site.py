"""The docs site in chromium: "Your first check" shows its session as a code block.

The site is built with ``mkdocs build --strict`` and opened from disk (no server, no
network). The fenced ```` ```sh runnable ```` session used to come out as a paragraph
starting with the fence, its comment lines as headings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("site")
    subprocess.run(
        [str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "-q", "-d", str(where)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=True,
        timeout=300,
    )
    return where


def test_your_first_check_shows_its_session_as_code(
    page: Any, site: Path, screenshots: Path
) -> None:
    page.goto((site / "getting-started" / "first-check" / "index.html").as_uri())
    block = page.locator("div.runnable pre > code").first
    assert block.count() == 1
    code = block.inner_text()
    assert code.startswith('cd "$(mktemp -d)"'), code[:200]
    assert "scorebox run" in code
    # Nothing of the session leaked into the page's text or headings.
    text = page.locator("article").inner_text()
    assert "```" not in text
    headings = page.locator("article h1, article h2, article h3").all_inner_texts()
    assert not [h for h in headings if "scratch directory" in h], headings
    box = block.bounding_box()
    assert box and box["height"] > 100  # a multi-line block, not one paragraph line
    page.screenshot(path=str(screenshots / "docs-site-first-check.png"), full_page=False)
