"""Declared environments on Docker: the offline install and the operator's sdist builds.

The container half of :mod:`engine.environments` (its ``Installer`` and ``WheelBuilder``):
an environment is a derived image ``scorebox-env:<key>`` committed from an install
container with no network; ``scorebox env wheel`` builds an sdist in a hardened container
and takes the wheel out as a stream on the container's stdout, so the host never reads a
path the build could have written (a planted symlink reaches nothing on the host).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import io
import json
import re
import tarfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import docker
import requests.exceptions
from docker.types import Ulimit

from engine.environments.build import Environments
from engine.environments.records import ENV_PATH, ENV_REPOSITORY, EnvironmentRecord
from engine.environments.wheels import BuiltWheel
from engine.errors import EnvironmentBuildError, SandboxError
from engine.sandbox.docker.containers import (
    LABEL_MANAGED,
    LABEL_OWNER,
    SANDBOX_USER,
    docker_errors,
    owner_label,
)
from engine.settings import Settings

#: The offline install inside a derived environment's build container: pip (its own wheel,
#: run from the file) installs the downloaded wheels with no index, the files it was given
#: are deleted, and one JSON line reports what resolved and the installed size.
_INSTALL_REPORT = f"""
import json, os, pathlib
root = pathlib.Path({ENV_PATH!r})
resolved = {{}}
for info in root.glob("*.dist-info"):
    name, _, version = info.name[: -len(".dist-info")].rpartition("-")
    resolved[name] = version
size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())
print("SCOREBOX-ENV " + json.dumps({{"resolved": resolved, "size": size}}))
"""
_BUILD_DIR = "/opt/scorebox-build"
#: Where the install container's pip works and installs first: a tmpfs of at most
#: SCOREBOX_ENV_MAX_MB, so an install can write no more than that (a zip bomb fills the
#: tmpfs and fails) before the bounded result is copied into the image's layer.
_STAGE_DIR = "/tmp/scorebox-stage"  # nosec B108: inside the container
ENV_LABEL = "scorebox.env"
#: ``scorebox.env`` of the install container; its committed image says ``environment``
#: (a label is inherited by the image and by every check container made from it).
ENV_LABEL_BUILD = "build"
ENV_LABEL_IMAGE = "environment"
ENV_LABEL_WHEEL = "wheel"
#: Limits of the install container: pip and compileall only, no package code. Its tmpfs
#: (up to SCOREBOX_ENV_MAX_MB) is memory, so the limit grows by as much.
INSTALL_MEMORY_MB = 1024
INSTALL_PIDS = 256
#: Markers of the wheel's stream on the build container's stdout.
_WHEEL_HEAD = "SCOREBOX-WHEEL "
_WHEEL_END = "SCOREBOX-WHEEL-END"
_WHEEL_OUT = "/tmp/scorebox-out"  # nosec B108: the build container's own tmpfs
#: Run in the build container once pip has built: the one wheel it made, as base64 lines on
#: stdout. Only a regular file, opened without following a link (a planted symlink would
#: otherwise hand over whatever it points at inside the container).
_WHEEL_EMIT = f"""
import base64, hashlib, json, os, stat, sys
out = {_WHEEL_OUT!r}
names = sorted(n for n in os.listdir(out) if n.endswith(".whl"))
if len(names) != 1:
    sys.stderr.write("scorebox: the build made %d wheels: %s\\n" % (len(names), names))
    sys.exit(3)
path = os.path.join(out, names[0])
info = os.lstat(path)
if not stat.S_ISREG(info.st_mode):
    sys.stderr.write("scorebox: %s is not a regular file (a link?): refused\\n" % names[0])
    sys.exit(4)
fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
with os.fdopen(fd, "rb") as handle:
    data = handle.read()
sys.stdout.write({_WHEEL_HEAD!r} + json.dumps({{"name": names[0], "size": len(data),
    "sha256": hashlib.sha256(data).hexdigest()}}) + "\\n")
encoded = base64.b64encode(data).decode()
for start in range(0, len(encoded), 65536):
    sys.stdout.write(encoded[start:start + 65536] + "\\n")
sys.stdout.write({_WHEEL_END!r} + "\\n")
"""


class DockerEnvironments:
    """Declared environments as derived images ``scorebox-env:<key>`` on this Docker engine.

    Why a derived image rather than a volume: an image is created atomically when its tag
    is set (a half-built environment is never visible), exists per Docker engine exactly
    where the check's containers run (a remote SCOREBOX_DOCKER_HOST included), records
    what resolved in its labels, runs unchanged under runc and runsc, and leaves the
    check's container as it is: read-only root, no network, no extra mount.
    """

    def __init__(self, client: Any, settings: Settings) -> None:
        self.client = client
        self.settings = settings

    def find_environment(self, key: str) -> EnvironmentRecord | None:
        """The record in the labels of ``scorebox-env:<key>``, or None."""
        try:
            with docker_errors(self.settings.docker_host):
                image = self.client.images.get(f"{ENV_REPOSITORY}:{key}")
        except SandboxError:
            return None
        return _record_of(image)

    def list_environments(self) -> list[EnvironmentRecord]:
        """Every ``scorebox-env`` image on the engine."""
        with docker_errors(self.settings.docker_host):
            images = self.client.images.list(filters={"label": f"{ENV_LABEL}.key"})
        records = [_record_of(image) for image in images]
        return [record for record in records if record is not None]

    def remove_environment(self, key: str) -> bool:
        """Delete ``scorebox-env:<key>``."""
        try:
            with docker_errors(self.settings.docker_host):
                self.client.images.remove(f"{ENV_REPOSITORY}:{key}", force=True)
        except SandboxError:
            return False
        return True

    def install_environment(
        self,
        key: str,
        wheels: Path,
        requirements: Sequence[str],
        *,
        timeout: float,
        max_bytes: int,
        log_file: Path,
    ) -> EnvironmentRecord:
        """Install ``wheels`` offline in a container with no network, then commit it."""
        started = time.monotonic()
        pip = f"{_BUILD_DIR}/scorebox-installer-pip.whl/pip"
        max_mb = max(1, max_bytes // (1024 * 1024))
        script = (
            f"set -e; python3 -I {pip} install --no-index --find-links {_BUILD_DIR} "
            f"--target {_STAGE_DIR} --disable-pip-version-check --no-cache-dir --no-input "
            f"--no-warn-script-location -r {_BUILD_DIR}/requirements.txt; "
            f"rm -rf {_BUILD_DIR}; mkdir -p {ENV_PATH}; cp -a {_STAGE_DIR}/. {ENV_PATH}/; "
            f'rm -rf {_STAGE_DIR}; python3 -I -c "$SCOREBOX_REPORT"'
        )
        memory = f"{INSTALL_MEMORY_MB + max_mb}m"
        with docker_errors(self.settings.docker_host):
            container = self.client.containers.create(
                image=self.settings.image,
                entrypoint=["/bin/sh", "-c", script],
                environment={
                    "SCOREBOX_REPORT": _INSTALL_REPORT,
                    "PYTHONDONTWRITEBYTECODE": "",
                    "TMPDIR": "/tmp",  # nosec B108: the bounded tmpfs below
                },
                user="0:0",  # root without capabilities: may write /opt, nothing more
                network_mode="none",
                network_disabled=True,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                pids_limit=INSTALL_PIDS,
                mem_limit=memory,
                memswap_limit=memory,
                nano_cpus=1_000_000_000,
                tmpfs={"/tmp": f"rw,nosuid,nodev,size={max_mb}m,mode=1777"},  # nosec B108
                ulimits=[Ulimit(name="fsize", soft=max_bytes, hard=max_bytes)],
                labels={
                    LABEL_MANAGED: "1",
                    LABEL_OWNER: owner_label(),
                    ENV_LABEL: ENV_LABEL_BUILD,
                },
                detach=True,
            )
        try:
            archive = _wheel_archive(wheels, requirements)
            with docker_errors(self.settings.docker_host):
                container.put_archive("/opt", archive)
            code, output = self._run(
                container,
                timeout,
                log_file,
                f"installing passed SCOREBOX_ENV_BUILD_TIMEOUT_SECONDS={timeout:.0f}",
            )
            report = _report_of(output)
            if code != 0 or report is None:
                tail = "\n".join(output.strip().splitlines()[-5:])
                full = "File too large" in output or "No space left on device" in output
                if code == 153 or full:  # SIGXFSZ (the fsize cap) or the tmpfs is full
                    raise EnvironmentBuildError(_too_large(max_bytes, None))
                raise EnvironmentBuildError(f"the offline install exited with {code}: {tail}")
            size = int(report["size"])
            if size > max_bytes:
                raise EnvironmentBuildError(_too_large(max_bytes, size))
            record = EnvironmentRecord(
                key=key,
                requirements=tuple(requirements),
                resolved={str(k): str(v) for k, v in dict(report["resolved"]).items()},
                size_bytes=size,
                base_image=self.settings.image,
                built_at=time.time(),
                build_seconds=round(time.monotonic() - started, 3),
                image=f"{ENV_REPOSITORY}:{key}",
            )
            labels = {
                ENV_LABEL: ENV_LABEL_IMAGE,  # not the install container's "build"
                f"{ENV_LABEL}.key": key,
                f"{ENV_LABEL}.record": json.dumps(record.to_dict(), sort_keys=True),
            }
            with docker_errors(self.settings.docker_host):
                container.commit(
                    repository=ENV_REPOSITORY,
                    tag=key,
                    conf={
                        "Labels": labels,
                        "Entrypoint": ["/usr/bin/tini", "--"],
                        "Cmd": ["python3", "-I", "/opt/scorebox/harness.py"],
                        "User": "10001:10001",
                        "WorkingDir": "/tmp",  # nosec B108: inside the container
                        "Env": ["PYTHONDONTWRITEBYTECODE=1", "LANG=C.UTF-8"],
                    },
                )
            return record
        finally:
            with contextlib.suppress(Exception):
                container.remove(force=True)

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
        """Build ``inputs/sdist`` in a hardened container with no network; its wheel.

        The sdist's own build code runs here, so this container is hardened like a check's
        (read-only root, no network, no capabilities, the sandbox user, SCOREBOX_RUNTIME)
        and sees only its inputs (read-only); no secrets. It has no host folder to write:
        the wheel comes back base64 on its stdout (pip's own output goes to stderr).
        """
        inputs.chmod(0o755)
        for path in inputs.iterdir():
            path.chmod(0o644)
        pip = "/in/scorebox-installer-pip.whl/pip"
        memory = f"{memory_mb}m"
        script = (
            f"python3 -I {pip} wheel --no-index --find-links /in --no-deps --no-cache-dir "
            f"--disable-pip-version-check --no-input --wheel-dir {_WHEEL_OUT} "
            f'"/in/$SCOREBOX_SDIST" 1>&2 && python3 -I -c "$SCOREBOX_EMIT"'
        )
        options: dict[str, Any] = {
            "image": self.settings.image,
            "entrypoint": ["/bin/sh", "-c", script],
            "environment": {
                "HOME": "/tmp",  # nosec B108: the container's own tmpfs
                "SCOREBOX_SDIST": sdist,
                "SCOREBOX_EMIT": _WHEEL_EMIT,
            },
            "user": SANDBOX_USER,
            "working_dir": "/tmp",  # nosec B108: inside the container
            "network_mode": "none",
            "network_disabled": True,
            "read_only": True,
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={memory_mb}m,mode=1777"},  # nosec B108
            "volumes": {str(inputs): {"bind": "/in", "mode": "ro"}},
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "pids_limit": INSTALL_PIDS,
            "mem_limit": memory,
            "memswap_limit": memory,
            "nano_cpus": 1_000_000_000,
            "ulimits": [Ulimit(name="fsize", soft=max_bytes, hard=max_bytes)],
            "labels": {
                LABEL_MANAGED: "1",
                LABEL_OWNER: owner_label(),
                ENV_LABEL: ENV_LABEL_WHEEL,
            },
            "detach": True,
        }
        if self.settings.runtime:
            options["runtime"] = self.settings.runtime
        with docker_errors(self.settings.docker_host):
            container = self.client.containers.create(**options)
        try:
            with docker_errors(self.settings.docker_host):
                container.start()
            try:
                status = container.wait(timeout=timeout)
            except (requests.exceptions.ConnectionError, requests.exceptions.ReadTimeout):
                self._kill_quietly(container)
                _append(log_file, self._logs(container, stdout=False))
                raise EnvironmentBuildError(
                    f"building {sdist} passed {timeout:.0f} s (log: {log_file})"
                ) from None
            errors = self._logs(container, stdout=False)
            _append(log_file, errors)
            code = int(status.get("StatusCode", -1))
            if code != 0:
                tail = "\n".join(errors.strip().splitlines()[-5:])
                raise EnvironmentBuildError(
                    f"building {sdist} exited with {code} (log: {log_file}): {tail}"
                )
            return wheel_of_stream(self._logs(container, stderr=False), sdist, max_bytes)
        finally:
            with contextlib.suppress(Exception):
                container.remove(force=True)

    def _run(
        self, container: Any, timeout: float, log_file: Path, too_long: str
    ) -> tuple[int, str]:
        """Start ``container``, wait up to ``timeout``; its exit code and output (logged)."""
        with docker_errors(self.settings.docker_host):
            container.start()
        try:
            status = container.wait(timeout=timeout)
        except (requests.exceptions.ConnectionError, requests.exceptions.ReadTimeout):
            self._kill_quietly(container)
            _append(log_file, self._logs(container))
            raise EnvironmentBuildError(too_long) from None  # the caller names the log
        output = self._logs(container)
        _append(log_file, output)
        return int(status.get("StatusCode", -1)), output

    def _logs(self, container: Any, *, stdout: bool = True, stderr: bool = True) -> str:
        try:
            raw: bytes = container.logs(stdout=stdout, stderr=stderr)
        except Exception:  # the container is gone: nothing more to keep
            return ""
        return raw.decode(errors="replace")

    @staticmethod
    def _kill_quietly(container: Any) -> None:
        with contextlib.suppress(Exception):
            container.kill()


_WHEEL_NAME = re.compile(r"^[A-Za-z0-9_.+!-]+\.whl$")


def wheel_of_stream(stdout: str, sdist: str, max_bytes: int) -> BuiltWheel:
    """The wheel a build container wrote on its stdout, checked (name, size, sha256)."""
    lines = stdout.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith(_WHEEL_HEAD)]
    if len(heads) != 1 or _WHEEL_END not in lines[heads[0] :]:
        raise EnvironmentBuildError(
            f"the build of {sdist} handed back no wheel (or more than one): its build code "
            "may have tampered with the output; nothing was copied into the wheelhouse"
        )
    start = heads[0]
    end = lines.index(_WHEEL_END, start)
    try:
        head = json.loads(lines[start][len(_WHEEL_HEAD) :])
        name, size, digest = str(head["name"]), int(head["size"]), str(head["sha256"])
        if size > max_bytes:
            raise ValueError(f"{size} bytes, over {max_bytes}")
        data = base64.b64decode("".join(lines[start + 1 : end]), validate=True)
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise EnvironmentBuildError(
            f"the build of {sdist} handed back an unreadable wheel ({exc}): nothing was "
            "copied into the wheelhouse"
        ) from exc
    intact = len(data) == size and hashlib.sha256(data).hexdigest() == digest
    if not _WHEEL_NAME.match(name) or not intact:
        raise EnvironmentBuildError(
            f"the build of {sdist} handed back a wheel that does not match its own "
            "description (name, size or sha256): nothing was copied into the wheelhouse"
        )
    return BuiltWheel(name, data)


def _too_large(max_bytes: int, size: int | None) -> str:
    what = f"is {size / 1e6:.1f} MB" if size is not None else "grew"
    return (
        f"the environment {what}, past SCOREBOX_ENV_MAX_MB={max_bytes // (1024 * 1024)}: "
        "declare fewer or smaller packages, or ask the operator to raise the limit"
    )


def _wheel_archive(wheels: Path, requirements: Sequence[str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        root = tarfile.TarInfo("scorebox-build")
        root.type = tarfile.DIRTYPE
        root.mode = 0o755
        tar.addfile(root)
        for path in sorted(wheels.iterdir()):
            if path.is_file():
                tar.add(path, arcname=f"scorebox-build/{path.name}")
        listing = ("\n".join(requirements) + "\n").encode()
        info = tarfile.TarInfo("scorebox-build/requirements.txt")
        info.size = len(listing)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(listing))
    return buffer.getvalue()


def _report_of(output: str) -> dict[str, Any] | None:
    for line in reversed(output.splitlines()):
        if line.startswith("SCOREBOX-ENV "):
            try:
                data: dict[str, Any] = json.loads(line[len("SCOREBOX-ENV ") :])
            except ValueError:
                return None
            return data
    return None


def _record_of(image: Any) -> EnvironmentRecord | None:
    labels = (image.attrs.get("Config") or {}).get("Labels") or {}
    raw = labels.get(f"{ENV_LABEL}.record")
    if not raw:
        return None
    try:
        data = json.loads(raw)
        data["requirements"] = tuple(data["requirements"])
        return EnvironmentRecord(**data)
    except (ValueError, TypeError, KeyError):
        return None


def _append(path: Path, text: str) -> None:
    with path.open("a") as handle:
        handle.write(text)


def docker_environments(settings: Settings) -> Environments:
    """The environment cache on the configured Docker engine, without a warm pool."""
    with docker_errors(settings.docker_host):
        client = (
            docker.DockerClient(base_url=settings.docker_host)
            if settings.docker_host
            else docker.from_env()
        )
    return Environments(settings, DockerEnvironments(client, settings))
