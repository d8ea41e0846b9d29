"""docs/deploy.md's install recipe, run as written: a built wheel in a fresh virtualenv.

The steps are the page's: `pip wheel --no-deps .`, a venv, `pip install --require-hashes
-r requirements/runtime.lock`, `pip install --no-deps` the wheel, then `scorebox image
build` and `scorebox --help` from that venv. The image build from the installed package
must assemble the very context the checkout does (same content hash, so the image the
checkout built is "up to date" and nothing is rebuilt): a file missing from the wheel's
package data changes the hash, or stops the build with the missing file's name.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from engine.sandbox.docker.image import build_image
from engine.settings import Settings

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1500)]

ROOT = Path(__file__).resolve().parents[2]

#: What the image build reads from the installed package (engine/sandbox/docker/image/context.py).
IMAGE_FILES = (
    "sandbox_images/python/Dockerfile",
    "sandbox_images/python/harness.py",
    "sandbox_images/python/gateway.py",
    "sandbox_images/python/okareo/__init__.py",
    "sandbox_images/python/okareo/checks.py",
    "sandbox_images/python/stand-in-modules/reward_kit/__init__.py",
    "engine/contract/restricted.py",
    "engine/checks.py",
)


def _run(argv: Sequence[str | Path], cwd: Path, env: dict[str, str] | None = None) -> str:
    # never from the checkout: `python -c` would import the checkout's engine/ from the cwd
    proc = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env=env,
    )
    assert proc.returncode == 0, f"{' '.join(map(str, argv))} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the venv it is installed in with the runtime lock's dependencies)."""
    where = tmp_path_factory.mktemp("recipe")
    pip_wheel: list[str | Path] = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--quiet",
        ROOT,
    ]
    _run([*pip_wheel, "-w", where / "dist"], where)
    (wheel,) = (where / "dist").glob("scorebox-*.whl")
    venv = where / "venv"
    _run([sys.executable, "-m", "venv", venv], where)
    pip: list[str | Path] = [venv / "bin" / "python", "-m", "pip", "--disable-pip-version-check"]
    pip.append("--quiet")
    _run([*pip, "install", "--require-hashes", "-r", ROOT / "requirements" / "runtime.lock"], where)
    _run([*pip, "install", "--no-deps", wheel], where)
    return wheel, venv


def test_the_wheel_carries_the_image_sources(installed: tuple[Path, Path]) -> None:
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [name for name in IMAGE_FILES if name not in names]
    assert not missing, f"the wheel lacks what `scorebox image build` reads: {missing}"
    assert not [n for n in names if n.startswith("sandbox_images/python/build/")]


def test_the_installed_cli_answers(installed: tuple[Path, Path]) -> None:
    _, venv = installed
    out = _run([venv / "bin" / "scorebox", "--help"], venv)
    assert "image" in out and "serve" in out and "worker" in out
    code = "import engine.sandbox.docker.image as i; print(i.source_dirs()[0])"
    image_dir = _run([venv / "bin" / "python", "-c", code], venv).strip()
    assert image_dir.startswith(str(venv)), f"the venv found the image sources at {image_dir}"


def test_image_build_from_the_installed_package_is_the_checkouts_image(
    installed: tuple[Path, Path], docker_settings: Settings, tmp_path: Path
) -> None:
    _, venv = installed
    expected = build_image(docker_settings, log=lambda _line: None)
    env = {
        **os.environ,
        "SCOREBOX_DATA_DIR": str(tmp_path / "data"),
        "SCOREBOX_IMAGE": docker_settings.image,
    }
    out = _run([venv / "bin" / "scorebox", "image", "build"], tmp_path, env=env)
    last = out.strip().splitlines()[-1]
    assert last.startswith(expected.tag), out
    assert f"{expected.tag} is up to date" in out, out
    # the installed package keeps its build files under the data directory, not site-packages
    assert (
        tmp_path / "data" / "image-build" / "context" / "opt" / "scorebox" / "harness.py"
    ).is_file()
