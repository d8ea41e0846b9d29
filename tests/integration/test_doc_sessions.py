"""Every fenced ```sh runnable block of README.md and docs/*.md runs, as written,
against a fresh server (its own port and data dir), and must exit 0 (issue 11,
finding 9: the README's curl session failed silently when pasted)."""

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


def sessions() -> list[tuple[str, str]]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, match in enumerate(BLOCK.finditer(path.read_text(encoding="utf-8"))):
            found.append((f"{path.relative_to(ROOT)}#{number}", match.group(1)))
    return found


def test_the_readme_has_a_runnable_session() -> None:
    assert any(name.startswith("README.md") for name, _ in sessions())


@pytest.mark.parametrize(("name", "script"), sessions(), ids=[n for n, _ in sessions()])
def test_session_runs(name: str, script: str, tmp_path: Path, docker_settings: Settings) -> None:
    log = tmp_path / "session.log"
    env = {
        **os.environ,
        "SCOREBOX_PORT": str(free_port()),
        "SCOREBOX_DATA_DIR": str(tmp_path / "data"),
        "SCOREBOX_IMAGE": docker_settings.image,
        "SCOREBOX_CONTAINER_LABELS": json.dumps(docker_settings.container_labels),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("SCOREBOX_DATABASE_URL", None)
    if docker_settings.runtime:
        env["SCOREBOX_RUNTIME"] = docker_settings.runtime
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
