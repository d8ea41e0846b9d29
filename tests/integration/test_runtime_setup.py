"""SCOREBOX_RUNTIME: serve and the app refuse a runtime the engine lacks; doctor lists them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.settings import Settings

pytestmark = pytest.mark.docker

SCOREBOX = str(Path(sys.executable).with_name("scorebox"))


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOREBOX_")}
    return {**env, **extra}


def test_serve_refuses_a_runtime_the_engine_lacks(
    docker_settings: Settings, tmp_path: Path
) -> None:
    done = subprocess.run(
        [SCOREBOX, "serve", "--port", "0"],
        env=_env(SCOREBOX_RUNTIME="no-such-runtime", SCOREBOX_DATA_DIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "SCOREBOX_RUNTIME=no-such-runtime" in done.stderr
    assert "unset SCOREBOX_RUNTIME" in done.stderr


def test_the_app_refuses_to_start_with_a_missing_runtime(
    docker_settings: Settings, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from engine.app import create_app
    from engine.errors import RuntimeUnavailableError

    settings = docker_settings.model_copy(
        update={"runtime": "no-such-runtime", "data_dir": tmp_path}
    )
    with (
        pytest.raises(RuntimeUnavailableError, match="offers only"),
        TestClient(create_app(settings)),
    ):
        pass


def test_doctor_reports_the_runtimes(docker_settings: Settings, tmp_path: Path) -> None:
    done = subprocess.run(
        [SCOREBOX, "doctor", "--json"],
        env=_env(SCOREBOX_RUNTIME="runsc", SCOREBOX_DATA_DIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    offered = subprocess.run(
        ["docker", "info", "--format", "{{json .Runtimes}}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    if "runsc" in json.loads(offered):
        assert report["runtime"]["ok"], report["runtime"]
        assert "sandboxes use runsc (gVisor)" in report["runtime"]["detail"]
        assert "runc" in report["runtime"]["detail"]
    else:
        assert not report["runtime"]["ok"]
        assert "scripts/gvisor.sh" in report["runtime"]["detail"]
