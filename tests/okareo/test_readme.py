"""The docs' Okareo-compatible API page: its files, unchanged, against a live server; same
output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.okareo.conftest import ROOT, Server

pytestmark = pytest.mark.docker

PAGE = ROOT / "docs" / "service" / "okareo.md"
SECTION = PAGE.name


def _section() -> str:
    return PAGE.read_text()


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


def test_readme_okareo_script_runs_unchanged_and_prints_per_row_results(
    okareo_server: Server, tmp_path: Path
) -> None:
    section = _section()
    files: dict[str, str] = {}
    for block in _blocks(section, "python"):
        found = re.match(r"# (\S+\.py)", block)
        assert found, f"a python block of {SECTION!r} does not start with '# FILE.py'"
        files[found.group(1)] = block
    assert set(files) == {"mentions_city.py", "score_capitals.py"}
    for name, source in files.items():
        (tmp_path / name).write_text(source)

    output = okareo_server.run(tmp_path / "score_capitals.py").strip().splitlines()

    (transcript,) = _blocks(section, "text")
    expected = [line for line in transcript.strip().splitlines() if not line.startswith("$ ")]
    assert len(output) == len(expected), output
    for got, want in zip(output, expected, strict=True):
        if "..." in want:
            assert got.startswith(want.split("...")[0]), (got, want)
        else:
            assert got == want
