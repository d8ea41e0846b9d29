"""Build and inspect the sandbox image (docs/architecture.md, "Sandbox").

:func:`build_image` turns ``sandbox_images/python/`` into ``scorebox-sandbox:<hash12>``,
also tagged ``Settings.image`` and ``scorebox-sandbox:latest``:

1. wheels for the :data:`~engine.validation.rules.SANDBOX_PACKAGES` that come from PyPI are
   downloaded on the host, pinned at the host's installed version and cached;
2. a base is chosen: ``--base``, else ``debian:bookworm-slim`` (present or pulled),
   else a bookworm root file system made with ``debootstrap`` that already holds every
   Debian package, imported as ``scorebox-base:bookworm-<hash12>``;
3. the build context is assembled and hashed (every file, the package lists, the base);
4. when the hashed tag exists nothing is built; otherwise ``docker build`` runs, with
   no network when the base already holds every package.

It drives the ``docker`` CLI through subprocess, so ``engine.sandbox.docker.backend``
and ``containers`` stay the only modules that import ``docker``. The package lists,
apt source parsing and context hashing are plain functions of their arguments.
"""

from __future__ import annotations

from engine.sandbox.docker.image.apt import (
    apt_sources,
    find_mirror,
    mirrors_from_deb822,
    mirrors_from_sources_list,
    stand_in_control,
)
from engine.sandbox.docker.image.bootstrap import BaseImage, bootstrap_base, resolve_base
from engine.sandbox.docker.image.build import (
    VERSIONS_FILE,
    BuildResult,
    ImageStatus,
    ImageVersions,
    build_image,
    image_status,
    image_versions,
)
from engine.sandbox.docker.image.constants import (
    BASE_DEBIAN_PACKAGES,
    BASE_REPOSITORY,
    BOOTSTRAP_RECIPE,
    BOOTSTRAP_TIMEOUT_SECONDS,
    BUILD_TIMEOUT_SECONDS,
    CARRIED_MODULES,
    CARRIED_PACKAGES,
    DEFAULT_MIRROR,
    HASH_LABEL,
    LATEST,
    LAUNCHER,
    PULL_TIMEOUT_SECONDS,
    PYTHON_VERSION,
    REGISTRY_BASE,
    REPOSITORY,
    STAND_INS,
    SUITE,
    Log,
)
from engine.sandbox.docker.image.context import (
    assemble_context,
    carried_files,
    hash_context,
    image_build_dir,
    source_dirs,
)
from engine.sandbox.docker.image.docker_cli import DockerCLI
from engine.sandbox.docker.image.packages import (
    PackageInfo,
    bootstrap_tag,
    debian_packages,
    host_version,
    sandbox_packages,
    wheel_requirements,
)
from engine.sandbox.docker.image.wheels import ensure_wheels, manylinux_platforms, wheel_matches

__all__ = [
    "BASE_DEBIAN_PACKAGES",
    "BASE_REPOSITORY",
    "BOOTSTRAP_RECIPE",
    "BOOTSTRAP_TIMEOUT_SECONDS",
    "BUILD_TIMEOUT_SECONDS",
    "CARRIED_MODULES",
    "CARRIED_PACKAGES",
    "DEFAULT_MIRROR",
    "HASH_LABEL",
    "LATEST",
    "LAUNCHER",
    "PULL_TIMEOUT_SECONDS",
    "PYTHON_VERSION",
    "REGISTRY_BASE",
    "REPOSITORY",
    "STAND_INS",
    "SUITE",
    "VERSIONS_FILE",
    "BaseImage",
    "BuildResult",
    "DockerCLI",
    "ImageStatus",
    "ImageVersions",
    "Log",
    "PackageInfo",
    "apt_sources",
    "assemble_context",
    "bootstrap_base",
    "bootstrap_tag",
    "build_image",
    "carried_files",
    "debian_packages",
    "ensure_wheels",
    "find_mirror",
    "hash_context",
    "host_version",
    "image_build_dir",
    "image_status",
    "image_versions",
    "manylinux_platforms",
    "mirrors_from_deb822",
    "mirrors_from_sources_list",
    "resolve_base",
    "sandbox_packages",
    "source_dirs",
    "stand_in_control",
    "wheel_matches",
    "wheel_requirements",
]
