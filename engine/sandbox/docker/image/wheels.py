"""Wheels for the PyPI packages, downloaded on the host and cached."""

from __future__ import annotations

import re
import subprocess  # nosec B404
import sys
from collections.abc import Sequence
from pathlib import Path

from engine.errors import SandboxError
from engine.sandbox.docker.image.constants import PYTHON_VERSION, Log


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def wheel_matches(filename: str, requirement: str, arch: str) -> bool:
    """Whether a wheel file satisfies ``name`` or ``name==version`` on cp311 and ``arch``."""
    if not filename.endswith(".whl"):
        return False
    parts = filename[: -len(".whl")].split("-")
    if len(parts) < 5:
        return False
    name, _, version = requirement.partition("==")
    python_tag, abi_tag, platform_tag = parts[-3], parts[-2], parts[-1]
    python_ok = any(t in {"py3", "cp311"} for t in python_tag.split(".")) or (
        # a stable-ABI wheel built for an older CPython 3 (tokenizers: cp310-abi3)
        abi_tag == "abi3" and any(_abi3_fits(t) for t in python_tag.split("."))
    )
    platform_ok = platform_tag == "any" or (
        arch in platform_tag and "linux" in platform_tag and "musl" not in platform_tag
    )
    return (
        _normalize(parts[0]) == _normalize(name)
        and (not version or parts[1] == version)
        and python_ok
        and platform_ok
    )


def _abi3_fits(tag: str) -> bool:
    """Whether a ``cp3X`` tag's stable-ABI wheel runs on CPython 3.11."""
    return re.fullmatch(r"cp3(\d+)", tag) is not None and int(tag[3:]) <= 11


def manylinux_platforms(arch: str) -> list[str]:
    """pip ``--platform`` tags a bookworm (glibc 2.36) image accepts, newest first."""
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(36, 16, -1)]
    tags.append(f"manylinux2014_{arch}")
    if arch in {"x86_64", "i686"}:
        tags += [f"manylinux2010_{arch}", f"manylinux1_{arch}"]
    return tags


def ensure_wheels(requirements: Sequence[str], cache: Path, arch: str, log: Log) -> list[Path]:
    """A cached wheel per requirement, downloading (no dependencies) the ones missing."""
    cache.mkdir(parents=True, exist_ok=True)
    wheels = []
    for requirement in requirements:
        found = sorted(p for p in cache.iterdir() if wheel_matches(p.name, requirement, arch))
        if not found:
            log(f"downloading wheel {requirement} ...")
            cmd = [
                sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                "--disable-pip-version-check", "--python-version", PYTHON_VERSION,
                *(arg for tag in manylinux_platforms(arch) for arg in ("--platform", tag)),
                "--dest", str(cache), requirement,
            ]  # fmt: skip
            # bandit B603: argv is a list built here (no shell); no tenant input reaches it
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600)  # nosec B603
            found = sorted(p for p in cache.iterdir() if wheel_matches(p.name, requirement, arch))
            if proc.returncode != 0 or not found:
                tail = " ".join((proc.stderr or proc.stdout).split())[-400:]
                raise SandboxError(
                    f"could not download the wheel {requirement} for cp311/{arch}: PyPI must be "
                    f"reachable for the first build (later builds use {cache}). pip said: {tail}"
                )
        wheels.append(found[-1])
    return wheels
