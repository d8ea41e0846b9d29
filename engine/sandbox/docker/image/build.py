"""build_image and image_status: the entry points of the package."""

from __future__ import annotations

import contextlib
import fcntl
import json
import platform
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import SandboxError
from engine.sandbox.docker.image.bootstrap import resolve_base
from engine.sandbox.docker.image.constants import (
    BUILD_TIMEOUT_SECONDS,
    HASH_LABEL,
    LATEST,
    REPOSITORY,
    Log,
)
from engine.sandbox.docker.image.context import (
    assemble_context,
    hash_context,
    image_build_dir,
    source_dirs,
)
from engine.sandbox.docker.image.docker_cli import DockerCLI
from engine.sandbox.docker.image.packages import debian_packages, wheel_requirements
from engine.sandbox.docker.image.wheels import ensure_wheels
from engine.settings import Settings


@dataclass(frozen=True)
class BuildResult:
    """What ``build_image`` did."""

    tag: str  # scorebox-sandbox:<hash12>
    tags: tuple[str, ...]
    content_hash: str
    image_id: str
    built: bool  # False when the hashed tag existed already
    base: str
    seconds: float
    size_bytes: int | None


@dataclass(frozen=True)
class ImageStatus:
    """Whether the configured sandbox image is present, and what it is."""

    reference: str
    present: bool
    image_id: str | None = None
    content_hash: str | None = None
    created: str | None = None
    size_bytes: int | None = None


@contextlib.contextmanager
def _build_lock(build_dir: Path, log: Log) -> Iterator[None]:
    build_dir.mkdir(parents=True, exist_ok=True)
    with (build_dir / ".lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("another image build is running; waiting for it ...")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _size(found: Mapping[str, Any] | None) -> int | None:
    size = found.get("Size") if found else None
    return int(size) if isinstance(size, int) else None


def build_image(
    settings: Settings,
    *,
    force: bool = False,
    base: str | None = None,
    log: Log = print,
) -> BuildResult:
    """Build the sandbox image unless its content-hashed tag exists (``force`` rebuilds)."""
    started = time.monotonic()
    image_dir, engine_dir = source_dirs()
    build_dir = image_build_dir(image_dir, settings.data_dir)
    arch = platform.machine()
    cli = DockerCLI(settings.docker_host)
    cli.check_engine()
    with _build_lock(build_dir, log):
        requirements = wheel_requirements()
        wheels = ensure_wheels(requirements, build_dir / "wheels", arch, log)
        packages = debian_packages()
        base_image = resolve_base(cli, base, packages, arch, build_dir, log)
        context = build_dir / "context"
        assemble_context(context, image_dir, engine_dir, wheels)
        content_hash = hash_context(
            context,
            {
                "debian_packages": " ".join(packages),
                "wheels": " ".join(requirements),
                "base": base_image.ref,
                "base_id": base_image.image_id,
            },
        )
        tag = f"{REPOSITORY}:{content_hash[:12]}"
        tags = tuple(dict.fromkeys((tag, settings.image, LATEST)))
        found = None if force else cli.inspect(tag)
        built = found is None
        if found is None:
            log(f"building {tag} on {base_image.ref} ...")
            cli.stream(
                [
                    "build",
                    *(["--no-cache"] if force else []),
                    *(["--network", "none"] if base_image.complete else []),
                    "--build-arg", f"BASE={base_image.ref}",
                    "--build-arg", f"DEBIAN_PACKAGES={' '.join(packages)}",
                    "--build-arg", f"CONTENT_HASH={content_hash}",
                    *(arg for t in tags for arg in ("--tag", t)),
                    str(context),
                ],
                log,
                BUILD_TIMEOUT_SECONDS,
            )  # fmt: skip
            found = cli.inspect(tag)
            if found is None:
                raise SandboxError(f"docker build finished but {tag} is missing")
        else:
            for extra in tags[1:]:
                cli.run("tag", tag, extra)
        image_id = str(found["Id"])
    seconds = time.monotonic() - started
    if built:
        log(f"built {tag} ({image_id[:19]}) in {seconds:.1f} s")
    else:
        log(f"{tag} is up to date ({image_id[:19]}); tagged {', '.join(tags[1:])}")
    return BuildResult(
        tag, tags, content_hash, image_id, built, base_image.ref, seconds, _size(found)
    )


def image_status(settings: Settings) -> ImageStatus:
    """Whether ``settings.image`` is present, with its id and content hash."""
    found = DockerCLI(settings.docker_host).inspect(settings.image)
    if found is None:
        return ImageStatus(settings.image, present=False)
    labels = (found.get("Config") or {}).get("Labels") or {}
    return ImageStatus(
        settings.image,
        present=True,
        image_id=str(found["Id"]),
        content_hash=labels.get(HASH_LABEL),
        created=found.get("Created"),
        size_bytes=_size(found),
    )


VERSIONS_FILE = "/usr/share/scorebox/versions.json"


@dataclass(frozen=True)
class ImageVersions:
    """What the image holds, recorded when it was built (``VERSIONS_FILE``)."""

    python: str
    debian: Mapping[str, str]
    python_packages: Mapping[str, str]


def image_versions(settings: Settings) -> ImageVersions | None:
    """The exact versions inside ``settings.image``; None for an image built before they
    were recorded. Read in a throwaway container with no network."""
    proc = DockerCLI(settings.docker_host).run(
        "run", "--rm", "--network", "none", "--entrypoint", "cat",
        settings.image, VERSIONS_FILE,
        check=False, timeout=60,
    )  # fmt: skip
    if proc.returncode != 0:
        if "no such file" in (proc.stderr + proc.stdout).lower():
            return None
        raise SandboxError(f"could not read {VERSIONS_FILE} from {settings.image}: {proc.stderr}")
    data = json.loads(proc.stdout)
    return ImageVersions(
        python=str(data["python"]),
        debian=dict(data["debian"]),
        python_packages=dict(data["python_packages"]),
    )
