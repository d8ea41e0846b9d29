"""``scorebox env wheel``: an operator-approved wheel built from an sdist, offline.

Host side, runs no package code: the sdist is found through the index's simple API
(PEP 691 JSON), downloaded and checked against the index's sha256; its build
requirements are read from its ``pyproject.toml`` (PEP 518's default when absent) and
fetched as wheels with ``pip download --only-binary=:all:``. The build itself runs in a
hardened container with no network, no secrets and bounded time, memory and size
(:meth:`WheelBuilder.build_wheel`, the Docker backend), which hands the wheel back as a
stream (no host folder the build can write); it is checked and lands in
SCOREBOX_PACKAGES_WHEELHOUSE (:func:`store_wheel`).
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess  # nosec B404: pip is run as a fixed argument list
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from packaging.requirements import Requirement
from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from engine.environments.pip import download_command
from engine.errors import ConfigurationError, EnvironmentBuildError
from engine.redact import mask_credentials
from engine.settings import Settings

DEFAULT_INDEX = "https://pypi.org/simple"
#: PEP 518: what builds an sdist without ``[build-system]``.
DEFAULT_BUILD_REQUIRES = ("setuptools>=40.8.0", "wheel")
#: Bounds of the build container.
BUILD_TIMEOUT_SECONDS = 600.0
BUILD_MEMORY_MB = 2048
BUILD_MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class BuiltWheel:
    """A wheel a build container handed back: its file name and its bytes."""

    filename: str
    content: bytes


class WheelBuilder(Protocol):
    """The container half: build the one sdist in ``inputs``, offline, and hand it back."""

    def build_wheel(
        self,
        inputs: Path,
        sdist: str,
        *,
        timeout: float,
        memory_mb: int,
        max_bytes: int,
        log_file: Path,
    ) -> BuiltWheel:
        """The wheel, taken out of the container as a stream (never through a host folder
        the build could write); raise EnvironmentBuildError naming the cause and the log."""
        ...


@dataclass(frozen=True)
class Sdist:
    """An sdist file the index lists: name, version, URL and its sha256."""

    filename: str
    version: Version
    url: str
    sha256: str


def pip_config(key: str) -> str | None:
    """A value of pip's own configuration (``global.index-url``...), or None."""
    done = subprocess.run(  # nosec B603: fixed argument list
        [sys.executable, "-m", "pip", "config", "get", key],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None


def index_url(settings: Settings) -> str:
    """SCOREBOX_PACKAGE_INDEX_URL, else pip's index-url, else PyPI's simple API."""
    return (settings.package_index_url or pip_config("global.index-url") or DEFAULT_INDEX).rstrip(
        "/"
    )


def pick_sdist(requirement: Requirement, files: list[dict[str, Any]], base: str) -> Sdist:
    """The newest non-yanked sdist the requirement admits, from a PEP 691 file list."""
    import httpx  # noqa: PLC0415 (lazy: only `scorebox env wheel` needs it)

    name = canonicalize_name(requirement.name)
    candidates: list[Sdist] = []
    for entry in files:
        filename = str(entry.get("filename", ""))
        if not filename.endswith((".tar.gz", ".zip")) or entry.get("yanked"):
            continue
        try:
            sdist_name, version = parse_sdist_filename(filename)
        except (ValueError, InvalidVersion):
            continue
        sha256 = (entry.get("hashes") or {}).get("sha256")
        if sdist_name != name or not sha256:
            continue
        if requirement.specifier.contains(version, prereleases=False):
            url = str(httpx.URL(base + "/").join(str(entry["url"])))
            candidates.append(Sdist(filename, version, url, str(sha256)))
    if not candidates:
        raise EnvironmentBuildError(
            f"the index lists no sdist of `{requirement}` with a sha256: check the name and "
            "version, or put a wheel in SCOREBOX_PACKAGES_WHEELHOUSE by hand"
        )
    return max(candidates, key=lambda s: s.version)


def fetch_sdist(requirement: Requirement, dest: Path, settings: Settings) -> Path:
    """Download the sdist through the simple API and check it against the index's hash."""
    import httpx  # noqa: PLC0415 (lazy: only `scorebox env wheel` needs it)

    base = index_url(settings)
    verify: str | bool = pip_config("global.cert") or True
    url = f"{base}/{canonicalize_name(requirement.name)}/"
    headers = {"Accept": "application/vnd.pypi.simple.v1+json"}
    try:
        with httpx.Client(verify=verify, timeout=120, follow_redirects=True) as client:
            listing = client.get(url, headers=headers)
            listing.raise_for_status()
            sdist = pick_sdist(requirement, list(listing.json().get("files", [])), url)
            response = client.get(sdist.url)
            response.raise_for_status()
    except (httpx.HTTPError, ValueError) as exc:
        raise EnvironmentBuildError(
            f"could not fetch the sdist of `{requirement}`: {mask_credentials(str(exc))}"
        ) from exc
    digest = hashlib.sha256(response.content).hexdigest()
    if digest != sdist.sha256:
        raise EnvironmentBuildError(
            f"{sdist.filename}: sha256 {digest} differs from the index's {sdist.sha256}: "
            "refusing it"
        )
    path = dest / sdist.filename
    path.write_bytes(response.content)
    return path


def build_requires(sdist: Path) -> tuple[str, ...]:
    """``[build-system].requires`` of the sdist's top-level pyproject.toml (PEP 518)."""
    data: bytes | None = None
    if sdist.name.endswith(".zip"):
        with zipfile.ZipFile(sdist) as archive:
            for name in archive.namelist():
                if name.count("/") == 1 and name.endswith("/pyproject.toml"):
                    data = archive.read(name)
    else:
        with tarfile.open(sdist) as archive:
            for member in archive.getmembers():
                if member.name.count("/") == 1 and member.name.endswith("/pyproject.toml"):
                    handle = archive.extractfile(member)
                    data = handle.read() if handle else None
    if data is None:
        return DEFAULT_BUILD_REQUIRES
    try:
        system = tomllib.load(io.BytesIO(data)).get("build-system", {})
    except tomllib.TOMLDecodeError as exc:
        raise EnvironmentBuildError(f"{sdist.name}: pyproject.toml is not TOML: {exc}") from exc
    requires = system.get("requires") if isinstance(system, dict) else None
    if requires is None:
        return DEFAULT_BUILD_REQUIRES
    return tuple(str(r) for r in requires)


def build_wheel(
    requirement_text: str, settings: Settings, builder: WheelBuilder, work: Path
) -> Path:
    """Fetch, build offline, and copy the wheel into SCOREBOX_PACKAGES_WHEELHOUSE."""
    wheelhouse = settings.packages_wheelhouse
    if wheelhouse is None:
        raise ConfigurationError(
            "SCOREBOX_PACKAGES_WHEELHOUSE is not set: point it at a directory every "
            "environment build may read (it is passed to pip as --find-links)"
        )
    requirement = Requirement(requirement_text)
    inputs = work / "in"
    inputs.mkdir(parents=True)
    log_file = work / "build.log"
    sdist = fetch_sdist(requirement, inputs, settings)
    requires = build_requires(sdist)
    if requires:  # an in-tree backend may need nothing (`requires = []`)
        command = download_command(list(requires), inputs, settings)
        done = subprocess.run(  # nosec B603: fixed argument list
            command, capture_output=True, text=True, timeout=600, check=False
        )
        log_file.write_text(mask_credentials(f"$ {' '.join(command)}\n{done.stdout}{done.stderr}"))
        if done.returncode != 0:
            last = mask_credentials(done.stderr.strip()).splitlines()[-1:]
            raise EnvironmentBuildError(
                f"the build requirements of {sdist.name} ({', '.join(requires)}) have no "
                f"wheels: {last}"
            )
    pip = sorted((settings.data_dir / "environments" / "tools").glob("pip-*.whl"))
    if not pip:
        tools = settings.data_dir / "environments" / "tools"
        tools.mkdir(parents=True, exist_ok=True)
        subprocess.run(  # nosec B603: fixed argument list
            download_command(["pip"], tools, settings),
            capture_output=True,
            timeout=600,
            check=True,
        )
        pip = sorted(tools.glob("pip-*.whl"))
    (inputs / "scorebox-installer-pip.whl").write_bytes(pip[-1].read_bytes())
    built = builder.build_wheel(
        inputs,
        sdist.name,
        timeout=BUILD_TIMEOUT_SECONDS,
        memory_mb=BUILD_MEMORY_MB,
        max_bytes=BUILD_MAX_BYTES,
        log_file=log_file,
    )
    return store_wheel(built, canonicalize_name(requirement.name), wheelhouse)


def store_wheel(built: BuiltWheel, name: str, wheelhouse: Path) -> Path:
    """Write a built wheel of distribution ``name`` into the wheelhouse, checked.

    The name must be a wheel of ``name`` and the bytes a zip; the file is written beside
    its target with ``O_EXCL | O_NOFOLLOW`` and renamed over it, so a link planted in the
    wheelhouse is replaced, never followed.
    """
    try:
        wheel_name = parse_wheel_filename(built.filename)[0]
    except (InvalidWheelFilename, InvalidVersion) as exc:
        raise EnvironmentBuildError(
            f"the build handed back {built.filename!r}, not a wheel's file name: refused"
        ) from exc
    if wheel_name != name or "/" in built.filename or built.filename.startswith("."):
        raise EnvironmentBuildError(
            f"the build of `{name}` handed back {built.filename!r}, a wheel of another "
            "distribution: refused"
        )
    if not zipfile.is_zipfile(io.BytesIO(built.content)):
        raise EnvironmentBuildError(f"{built.filename} is not a zip archive: refused")
    wheelhouse.mkdir(parents=True, exist_ok=True)
    target = wheelhouse / built.filename
    partial = wheelhouse / f".{built.filename}.{os.getpid()}.partial"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    descriptor = os.open(partial, flags, 0o644)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(built.content)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def private_index_warning(settings: Settings) -> str | None:
    """Why any tenant could install whatever a private index serves, or None.

    An index other than PyPI (SCOREBOX_PACKAGE_INDEX_URL, or pip's own ``index-url`` or
    ``extra-index-url``) with no SCOREBOX_PACKAGES_ALLOW: every package it serves, the
    operator's private ones included, is one `dependencies` line away for every tenant.
    """
    if settings.packages_allow:
        return None
    indexes = [
        url
        for url in (
            settings.package_index_url,
            pip_config("global.index-url"),
            pip_config("global.extra-index-url"),
        )
        if url and url.rstrip("/") != DEFAULT_INDEX
    ]
    if not indexes:
        return None
    shown = ", ".join(mask_credentials(url) for url in indexes)
    return (
        f"packages come from {shown} as well as or instead of PyPI, and no allow list is "
        "set: any tenant can declare any package it serves, private ones included. Set "
        "SCOREBOX_PACKAGES_ALLOW to the names tenants may use"
    )
