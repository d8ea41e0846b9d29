"""The first five minutes: the demo's log survives a redirect, its report is written in its
data directory, and every way in says how to call ``scorebox`` from the virtualenv."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli.demo import REPORT_NAME, dashboard_lines, report_path, scorebox_command

ROOT = Path(__file__).resolve().parents[2]
DEV_SH = ROOT / "scripts" / "dev.sh"


def test_the_image_build_keeps_a_redirected_log_intact(tmp_path: Path) -> None:
    # `tee /dev/stderr` reopened `dev.sh demo > log 2>&1` with O_TRUNC: NUL bytes, lost lines
    script = DEV_SH.read_text(encoding="utf-8")
    code = [x for x in script.splitlines() if not x.strip().startswith("#")]
    assert [x for x in code if "/dev/stderr" in x] == []
    # ensure_image's build lines, run with a stand-in `scorebox image build`
    lines = code[code.index("    local built build_log") : 1 + next(
        i for i, x in enumerate(code) if x.strip().startswith("BUILT_IMAGE=")
    )]  # fmt: skip
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    fake = venv / "bin" / "scorebox"
    fake.write_text("#!/bin/sh\nprintf 'step 1\\nstep 2\\nscorebox-sandbox:abc built\\n'\n")
    fake.chmod(0o755)
    test = tmp_path / "t.sh"
    test.write_text(
        f'set -euo pipefail\nVENV="{venv}"\nf() {{\n'
        + "\n".join(lines)
        + '\n    echo "tag=$BUILT_IMAGE" >&2\n}\necho before >&2\nf\n'
    )
    log = tmp_path / "log"
    for _ in range(5):  # an asynchronous tee would lose the order now and then
        with log.open("wb") as out:
            subprocess.run(["bash", str(test)], stdout=out, stderr=subprocess.STDOUT, check=True)
        text = log.read_bytes()
        assert b"\0" not in text
        assert text.decode().splitlines() == [
            "before",
            "step 1",
            "step 2",
            "scorebox-sandbox:abc built",
            "tag=scorebox-sandbox:abc",
        ]


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
