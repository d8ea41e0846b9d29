"""The build context: assembled from sandbox_images/python and engine modules, and hashed."""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from engine.errors import SandboxError
from engine.sandbox.docker.image.apt import stand_in_control
from engine.sandbox.docker.image.constants import (
    CARRIED_MODULES,
    CARRIED_PACKAGES,
    LAUNCHER,
    STAND_IN_MODULES_DIR,
    STAND_INS,
)


def hash_context(context: Path, inputs: Mapping[str, str]) -> str:
    """sha256 over every file under ``context`` (path and content) and the ``inputs``."""
    digest = hashlib.sha256()
    for key in sorted(inputs):
        digest.update(f"input\0{key}\0{inputs[key]}\n".encode())
    files = sorted(
        (p.relative_to(context).as_posix(), p)
        for p in context.rglob("*")
        if p.is_file() or p.is_symlink()
    )
    for rel, path in files:
        if path.is_symlink():
            content = b"symlink\0" + os.readlink(path).encode()
        else:
            content = hashlib.sha256(path.read_bytes()).digest()
        digest.update(b"file\0" + rel.encode() + b"\0" + content + b"\n")
    return digest.hexdigest()


def carried_files(engine_dir: Path) -> list[str]:
    """The files of ``engine_dir`` the image carries (paths under it, sorted): every ``.py``
    file under :data:`CARRIED_PACKAGES` and each of :data:`CARRIED_MODULES`."""
    files = set(CARRIED_MODULES)
    for package in CARRIED_PACKAGES:
        init = engine_dir / package / "__init__.py"
        if not init.is_file():
            raise SandboxError(f"{init} is missing: the sandbox image cannot be built")
        for path in (engine_dir / package).rglob("*.py"):
            if "__pycache__" not in path.parts:
                files.add(path.relative_to(engine_dir).as_posix())
    return sorted(files)


def assemble_context(dest: Path, image_dir: Path, engine_dir: Path, wheels: Sequence[Path]) -> None:
    """Write the build context to ``dest`` (replacing it): Dockerfile, ``opt/scorebox/``
    and ``stand-ins/``.

    ``opt/scorebox/engine/__init__.py`` is empty: the host's package init (and
    everything it would pull in) never enters the image. ``opt/scorebox/harness.py`` is
    the :data:`LAUNCHER` of ``engine.harness``.
    """
    if dest.exists():
        shutil.rmtree(dest)
    opt = dest / "opt" / "scorebox"
    (opt / "engine").mkdir(parents=True)
    if not (image_dir / "Dockerfile").is_file():
        raise SandboxError(
            f"{image_dir / 'Dockerfile'} is missing: the sandbox image cannot be built"
        )
    shutil.copyfile(image_dir / "Dockerfile", dest / "Dockerfile")
    (opt / "harness.py").write_text(LAUNCHER)
    (opt / "engine" / "__init__.py").write_bytes(b"")
    for name in carried_files(engine_dir):
        source = engine_dir / name
        if not source.is_file():
            raise SandboxError(f"{source} is missing: the sandbox image cannot be built")
        (opt / "engine" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, opt / "engine" / name)
    shutil.copytree(
        image_dir / "okareo",
        opt / "okareo",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        copy_function=shutil.copyfile,
    )
    shutil.copytree(
        image_dir / STAND_IN_MODULES_DIR,
        opt / STAND_IN_MODULES_DIR,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        copy_function=shutil.copyfile,
    )
    for name in STAND_INS:
        control = dest / "stand-ins" / name / "DEBIAN" / "control"
        control.parent.mkdir(parents=True)
        control.write_text(stand_in_control(name))
    site = opt / "site-packages"
    site.mkdir()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)


def source_dirs() -> tuple[Path, Path]:
    """``(sandbox_images/python, engine)``: of this checkout, or of the installed package
    (the wheel carries ``sandbox_images/python`` next to ``engine/`` as package data)."""
    engine_dir = Path(__file__).resolve().parents[3]
    image_dir = engine_dir.parent / "sandbox_images" / "python"
    if not (image_dir / "Dockerfile").is_file():
        raise SandboxError(
            f"sandbox image sources not found at {image_dir}: reinstall scorebox from its "
            "wheel (`pip install --no-deps scorebox-*.whl`, docs/deploy.md) or build the "
            "image from a source checkout (`scripts/dev.sh setup`)"
        )
    return image_dir, engine_dir


def image_build_dir(image_dir: Path, data_dir: Path) -> Path:
    """Where wheels, the base and the context are kept between builds.

    ``sandbox_images/python/build`` in a source checkout (as before); under the data
    directory for an installed package, whose site-packages may not be writable.
    """
    if (image_dir.parents[1] / "pyproject.toml").is_file():
        return image_dir / "build"
    return data_dir / "image-build"
