"""The first five minutes: the demo's log survives a redirect, its report is written in its
data directory, and every way in says how to call ``scorebox`` from the virtualenv."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from engine.cli.demo import REPORT_NAME, dashboard_lines, report_path, scorebox_command

ROOT = Path(__file__).resolve().parents[2]
DEV_SH = ROOT / "scripts" / "dev.sh"


def test_setup_and_demo_end_with_how_to_put_scorebox_on_path() -> None:
    script = DEV_SH.read_text(encoding="utf-8")
    assert re.search(r"^\s+setup\) setup; say_path ;;$", script, re.M)
    assert re.search(r"^\s+demo\) setup; run_demo; say_path ;;$", script, re.M)
    assert "source $VENV/bin/activate" in script


def test_the_demo_report_is_in_its_data_directory(tmp_path: Path) -> None:
    # was: /tmp/scorebox-demo-report.html, one path for every user of the machine
    assert report_path(None, tmp_path) == tmp_path / REPORT_NAME
    assert report_path(tmp_path / "r.html", tmp_path / "data") == tmp_path / "r.html"


def test_the_demo_says_the_scorebox_beside_its_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    beside = Path(sys.executable).parent / "scorebox"
    assert beside.exists()  # the test runs in the virtualenv
    monkeypatch.chdir(beside.parents[2])  # the checkout, for .venv/bin/scorebox
    assert scorebox_command() == str(beside.relative_to(beside.parents[2]))
    monkeypatch.chdir(tmp_path)
    assert scorebox_command() == str(beside)
    lines = dashboard_lines("http://127.0.0.1:1", "run1", "sbx_k", tmp_path / "d", False)
    assert lines == (
        f"to browse it: SCOREBOX_DATA_DIR={tmp_path / 'd'} {beside} serve, sign in with the "
        "key sbx_k, then open\ndashboard: http://127.0.0.1:8000/ui/runs/run1"
    )


def test_readme_and_install_page_say_how_to_get_scorebox_on_path() -> None:
    for page in (ROOT / "README.md", ROOT / "docs" / "getting-started" / "install.md"):
        text = page.read_text(encoding="utf-8")
        assert "source .venv/bin/activate" in text, page
