"""Every fenced ```sh runnable block of README.md and of every page of the docs site
(docs/**/*.md) runs, as written, against a fresh server (its own port and data dir),
and must exit 0 (the README's curl session once failed silently when pasted).

Every ```python runnable block runs too, with this interpreter, and must exit 0; the
comment lines that end it (``# ok True None``) are the output it shows, and must be
the last lines the session prints."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.settings import Settings
from tests.live_server import free_port

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```sh runnable\n(.*?)^```", re.MULTILINE | re.DOTALL)
PYTHON_BLOCK = re.compile(r"^```python runnable\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def sessions(block: re.Pattern[str] = BLOCK) -> list[tuple[str, str]]:
    found = []
    for path in _pages():
        for number, match in enumerate(block.finditer(path.read_text(encoding="utf-8"))):
            found.append((f"{path.relative_to(ROOT)}#{number}", match.group(1)))
    return found


def python_sessions() -> list[tuple[str, str]]:
    return sessions(PYTHON_BLOCK)


def shown_output(script: str) -> list[str]:
    """The ``# ...`` lines that end a Python session: what it prints, as the page shows it."""
    shown: list[str] = []
    for line in reversed(script.rstrip("\n").splitlines()):
        if not line.startswith("# "):
            break
        shown.insert(0, line[2:])
    return shown


def session_env(tmp_path: Path, docker_settings: Settings) -> dict[str, str]:
    """A session's environment: its own data directory (SQLite), the test image and runtime."""
    env = {
        **os.environ,
        "SCOREBOX_DATA_DIR": str(tmp_path / "data"),
        "SCOREBOX_IMAGE": docker_settings.image,
        "SCOREBOX_CONTAINER_LABELS": json.dumps(docker_settings.container_labels),
    }
    env.pop("SCOREBOX_DATABASE_URL", None)
    if docker_settings.runtime:
        env["SCOREBOX_RUNTIME"] = docker_settings.runtime
    return env


def test_the_readme_has_a_runnable_session() -> None:
    assert any(name.startswith("README.md") for name, _ in sessions())


def test_the_sites_pages_are_collected() -> None:
    names = {name.split("#")[0] for name, _ in sessions()}
    assert {"docs/service.md", "docs/getting-started/first-check.md"} <= names
    assert "docs/running/python-api.md" in {name.split("#")[0] for name, _ in python_sessions()}


def test_shown_output_is_the_trailing_comments() -> None:
    assert shown_output("x = 1\nprint(x)  # one\n# 1\n# 2\n") == ["1", "2"]
    assert shown_output("print(1)\n") == []


@pytest.mark.parametrize(("name", "script"), sessions(), ids=[n for n, _ in sessions()])
def test_session_runs(name: str, script: str, tmp_path: Path, docker_settings: Settings) -> None:
    log = tmp_path / "session.log"
    env = session_env(tmp_path, docker_settings)
    env["SCOREBOX_PORT"] = str(free_port())
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    process = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),  # a file, not a pipe: the server it starts keeps its copy open
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: the server it starts goes with it
    )
    try:
        process.wait(timeout=240)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    output = log.read_text(errors="replace")
    assert process.returncode == 0, f"{name} failed:\n{output}"


@pytest.mark.parametrize(
    ("name", "script"), python_sessions(), ids=[n for n, _ in python_sessions()]
)
def test_python_session_runs(
    name: str, script: str, tmp_path: Path, docker_settings: Settings
) -> None:
    env = session_env(tmp_path, docker_settings)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}{done.stderr}"
    shown = shown_output(script)
    printed = done.stdout.rstrip("\n").splitlines()
    assert printed[len(printed) - len(shown) :] == shown, f"{name} printed:\n{done.stdout}"
