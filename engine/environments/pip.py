"""pip on the host: the command lines for the sandbox's Python, run and read for tenants.

The one place that runs pip for an environment (``pip download`` of wheels only, and
``pip index versions`` when a requirement matched nothing). Its output goes to the build
log with every URL's credentials masked; what a failure says is for the tenant:
"the package index", no URL, no host path (:mod:`engine.environments.pip_output`).
"""

from __future__ import annotations

import logging
import os
import platform
import subprocess  # nosec B404: pip is run as a fixed argument list
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from engine.environments.pip_output import (
    INDEX_UNREACHABLE,
    NO_WHEEL,
    PACKAGE_INDEX,
    available_versions,
    for_tenant,
    no_wheel_message,
)
from engine.environments.spec import SANDBOX_PYTHON
from engine.errors import EnvironmentBuildError, PackageIndexError
from engine.redact import mask_credentials
from engine.settings import Settings

log = logging.getLogger(__name__)

#: The newest glibc whose manylinux wheels run on the sandbox (Debian bookworm: 2.36).
SANDBOX_GLIBC = (2, 36)


def platform_tags(machine: str | None = None) -> list[str]:
    """``--platform`` values for wheels that run on the sandbox (glibc manylinux, its arch)."""
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(
        (machine or platform.machine()).lower(), (machine or platform.machine()).lower()
    )
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(SANDBOX_GLIBC[1], 16, -1)]
    tags += [f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}"]
    return tags


def download_command(
    requirements: Sequence[str], dest: Path, settings: Settings, *, for_sandbox: bool = True
) -> list[str]:
    """The ``pip download`` argument list: wheels only, for the sandbox's Python and arch."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--no-input",
        "--only-binary=:all:",
        "--dest",
        str(dest),
    ]
    if for_sandbox:
        major, minor = SANDBOX_PYTHON.split(".")[:2]
        command += [
            "--python-version",
            f"{major}.{minor}",
            "--implementation",
            "cp",
            "--abi",
            f"cp{major}{minor}",
            "--abi",
            "abi3",
            "--abi",
            "none",
        ]
        for tag in platform_tags():
            command += ["--platform", tag]
    if settings.package_index_url:
        command += ["--index-url", settings.package_index_url]
    if settings.packages_wheelhouse:
        command += ["--find-links", str(settings.packages_wheelhouse)]
    return [*command, *requirements]


def index_versions_command(name: str, settings: Settings) -> list[str]:
    """``pip index versions NAME``: every version the index has, sdists included."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "index",
        "versions",
        name,
        "--pre",
        "--disable-pip-version-check",
        "--no-input",
    ]
    if settings.package_index_url:
        command += ["--index-url", settings.package_index_url]
    if settings.packages_wheelhouse:
        command += ["--find-links", str(settings.packages_wheelhouse)]
    return command


class HostPip:
    """Runs pip for one environment cache (``root``: its folder, kept out of messages)."""

    def __init__(self, settings: Settings, root: Path) -> None:
        self.settings = settings
        self.root = root

    def run(self, command: list[str], log_file: Path, step: str) -> str:
        """Run pip; its output goes to the build log with credentials masked, and a failure
        is said for the tenant: "the package index", no URL, no host path."""
        echoed = mask_credentials(f"$ {' '.join(command)}\n")
        try:
            done = subprocess.run(  # nosec B603: a fixed argument list, no shell
                command,
                capture_output=True,
                text=True,
                timeout=self.settings.env_build_timeout_seconds,
                check=False,
                env={**os.environ, "PIP_NO_INPUT": "1"},
            )
        except subprocess.TimeoutExpired as exc:
            with log_file.open("a") as handle:
                handle.write(f"{echoed}(timed out)\n")
            log.warning(
                "pip %s passed %.0f s against %s", step, exc.timeout, self.index_for_operators()
            )
            raise PackageIndexError(
                f"pip {step} passed SCOREBOX_ENV_BUILD_TIMEOUT_SECONDS="
                f"{self.settings.env_build_timeout_seconds:.0f} ({PACKAGE_INDEX} answered "
                "too slowly)"
            ) from exc
        output = f"{echoed}{mask_credentials(done.stdout)}{mask_credentials(done.stderr)}"
        with log_file.open("a") as handle:
            handle.write(output)
        if done.returncode != 0:
            unreachable = INDEX_UNREACHABLE.search(output)
            if unreachable:
                log.warning(
                    "pip %s could not reach %s (%s)",
                    step,
                    self.index_for_operators(),
                    unreachable.group(0),
                )
                raise PackageIndexError(
                    f"pip {step} could not reach {PACKAGE_INDEX} ({unreachable.group(0)})"
                )
            missing = NO_WHEEL.search(output)
            if missing:
                available = self.available(missing.group("req"), log_file)
                raise EnvironmentBuildError(no_wheel_message(output, command[-1:], available))
            tail = "\n".join(done.stderr.strip().splitlines()[-5:])
            raise EnvironmentBuildError(f"pip {step} failed: {self.for_tenant(tail)}")
        return output

    def available(self, requirement: str, log_file: Path) -> list[Version] | None:
        """Every version of ``requirement``'s distribution on the index (None: unknown), to
        tell a wrong pin or name from a package with no wheel."""
        try:
            name = Requirement(requirement).name
        except InvalidRequirement:
            return None
        command = index_versions_command(name, self.settings)
        try:
            done = subprocess.run(  # nosec B603: a fixed argument list, no shell
                command,
                capture_output=True,
                text=True,
                timeout=min(60.0, self.settings.env_build_timeout_seconds),
                check=False,
                env={**os.environ, "PIP_NO_INPUT": "1"},
            )
        except subprocess.TimeoutExpired:
            return None
        output = mask_credentials(f"$ {' '.join(command)}\n{done.stdout}{done.stderr}")
        with log_file.open("a") as handle:
            handle.write(output)
        return available_versions(output, done.returncode, name)

    def index_for_operators(self) -> str:
        """The index pip uses, for the server log: its URL with credentials masked."""
        url = self.settings.package_index_url
        return mask_credentials(url) if url else "pip's configured index"

    def for_tenant(self, text: str) -> str:
        """``text`` without URLs (said as "the package index") or this host's folders."""
        paths = [str(self.settings.data_dir), str(self.root), tempfile.gettempdir()]
        if self.settings.packages_wheelhouse:
            paths.append(str(self.settings.packages_wheelhouse))
        return for_tenant(text, paths)
