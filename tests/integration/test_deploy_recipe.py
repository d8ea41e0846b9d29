"""docs/deploy.md's install recipe, run as written: a built wheel in a fresh virtualenv.

The steps are the page's: `pip wheel --no-deps .`, a venv, `pip install --require-hashes
-r requirements/runtime.lock`, `pip install --no-deps` the wheel, then `scorebox --help`
and the image build's file discovery from that venv: the build context the installed
package assembles must be the very context the checkout assembles (the same content
hash, so the same image tag). A file missing from the wheel's package data changes the
hash, or stops the assembly with the missing file's name. (The image itself is not
built here: a build takes minutes and retags the shared `latest`; tests/integration/
test_image.py builds it from the checkout.)
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

ROOT = Path(__file__).resolve().parents[2]

#: What the image build reads from the installed package (engine/sandbox/docker/image/context.py).
IMAGE_FILES = (
    "sandbox_images/python/Dockerfile",
    "sandbox_images/python/okareo/__init__.py",
    "sandbox_images/python/okareo/checks.py",
    "sandbox_images/python/stand-in-modules/reward_kit/__init__.py",
    "engine/contract/restricted.py",
    "engine/harness/__main__.py",
    "engine/harness/gateway.py",
    "engine/checks.py",
)

#: Assembles the build context (without the downloaded wheels) where it runs and prints
#: the image sources' folder, the context's hash and where an image build keeps its files.
CONTEXT = """
import sys, tempfile
from pathlib import Path
from engine.sandbox.docker.image import assemble_context, hash_context, image_build_dir, source_dirs
image_dir, engine_dir = source_dirs()
dest = Path(tempfile.mkdtemp()) / "context"
assemble_context(dest, image_dir, engine_dir, [])
print(image_dir)
print(hash_context(dest, {}))
print(image_build_dir(image_dir, Path(sys.argv[1])))
"""


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
    # the checkout's context at the same moment (others may edit the tree meanwhile)
    checkout = _run([sys.executable, "-c", CONTEXT, where / "data"], ROOT).split("\n")[1]
    (where / "checkout-context").write_text(checkout)
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


def test_the_installed_package_assembles_the_checkouts_build_context(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    wheel, venv = installed
    image_dir, digest, build_dir = _run(
        [venv / "bin" / "python", "-c", CONTEXT, tmp_path / "data"], tmp_path
    ).split()
    assert image_dir.startswith(str(venv)), f"the venv found the image sources at {image_dir}"
    assert digest == (wheel.parent.parent / "checkout-context").read_text()
    # an installed package keeps its build files under the data directory, not site-packages
    assert build_dir == str(tmp_path / "data" / "image-build")
