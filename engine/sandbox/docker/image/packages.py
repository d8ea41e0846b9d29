"""Which packages go into the image: Debian packages and PyPI wheels at host versions."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from engine.sandbox.docker.image.constants import (
    BASE_DEBIAN_PACKAGES,
    BASE_REPOSITORY,
    BOOTSTRAP_RECIPE,
    STAND_INS,
    SUITE,
)
from engine.validation.rules import SANDBOX_PACKAGES, SandboxPackage


@dataclass(frozen=True)
class PackageInfo:
    """A third-party package importable in the sandbox, as the API lists it."""

    import_name: str
    version: str | None  # known for wheels (pinned at the host's version); None for Debian's
    source: str  # "debian" or "wheel"
    distribution: str  # the Debian package or the PyPI distribution

    def to_dict(self) -> dict[str, str | None]:
        """A JSON-ready dict."""
        return asdict(self)


def host_version(distribution: str) -> str | None:
    """The version of ``distribution`` installed on the host, or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def debian_packages(packages: Sequence[SandboxPackage] = SANDBOX_PACKAGES) -> tuple[str, ...]:
    """Every Debian package the image holds: python3, tini, then the contract's, in order."""
    names = list(BASE_DEBIAN_PACKAGES)
    for package in packages:
        if package.debian_package and package.debian_package not in names:
            names.append(package.debian_package)
    return tuple(names)


def wheel_requirements(
    packages: Sequence[SandboxPackage] = SANDBOX_PACKAGES,
    version_of: Callable[[str], str | None] = host_version,
) -> tuple[str, ...]:
    """pip requirements for the wheel packages, pinned at the host's version when installed."""
    requirements = []
    for package in packages:
        if package.wheel is None:
            continue
        version = package.version or version_of(package.wheel)
        requirements.append(f"{package.wheel}=={version}" if version else package.wheel)
    return tuple(requirements)


def sandbox_packages(
    packages: Sequence[SandboxPackage] = SANDBOX_PACKAGES,
    version_of: Callable[[str], str | None] = host_version,
) -> list[PackageInfo]:
    """The importable third-party packages, with versions where the host knows them."""
    out = []
    for package in packages:
        if package.wheel is not None:
            out.append(
                PackageInfo(
                    package.import_name,
                    package.version or version_of(package.wheel),
                    "wheel",
                    package.wheel,
                )
            )
        elif package.debian_package is not None:
            out.append(PackageInfo(package.import_name, None, "debian", package.debian_package))
    return out


def bootstrap_tag(packages: Sequence[str], arch: str) -> str:
    """The tag of a debootstrapped base holding ``packages``."""
    recipe = json.dumps([BOOTSTRAP_RECIPE, SUITE, "minbase", arch, list(packages), STAND_INS])
    return f"{BASE_REPOSITORY}:{SUITE}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"
