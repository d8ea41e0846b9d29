"""Build and inspect the sandbox image (DESIGN.md §4).

:func:`build_image` turns ``sandbox_images/python/`` into ``scorebox-sandbox:<hash12>``,
also tagged ``Settings.image`` and ``scorebox-sandbox:latest``:

1. wheels for the :data:`~engine.contract.SANDBOX_PACKAGES` that come from PyPI are
   downloaded on the host, pinned at the host's installed version and cached;
2. a base is chosen: ``--base``, else ``debian:bookworm-slim`` (present or pulled),
   else a bookworm root file system made with ``debootstrap`` that already holds every
   Debian package, imported as ``scorebox-base:bookworm-<hash12>``;
3. the build context is assembled and hashed (every file, the package lists, the base);
4. when the hashed tag exists nothing is built; otherwise ``docker build`` runs, with
   no network when the base already holds every package.

It drives the ``docker`` CLI through subprocess, so ``engine.sandbox.docker_backend``
stays the only module that imports ``docker``. The package lists, apt source parsing
and context hashing are plain functions of their arguments.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from engine.contract import SANDBOX_PACKAGES, SandboxPackage
from engine.errors import DockerUnavailableError, SandboxError
from engine.settings import Settings

Log = Callable[[str], None]

REPOSITORY = "scorebox-sandbox"
LATEST = f"{REPOSITORY}:latest"
BASE_REPOSITORY = "scorebox-base"
REGISTRY_BASE = "debian:bookworm-slim"
SUITE = "bookworm"
#: Debian bookworm's python3; the wheels are downloaded for it.
PYTHON_VERSION = "3.11"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
HASH_LABEL = "scorebox.content-hash"
#: Bump when the bootstrap procedure changes, so existing bases are not reused.
BOOTSTRAP_RECIPE = "1"
#: Always in the image, besides the packages of SANDBOX_PACKAGES.
BASE_DEBIAN_PACKAGES: tuple[str, ...] = ("python3", "tini")
#: Dependencies replaced by empty packages: python3-scipy depends on pythran, a compiler
#: it needs only at build time, which would pull g++ and boost (~400 MB) into the sandbox.
STAND_INS: tuple[str, ...] = ("python3-pythran",)
#: Engine modules copied into /opt/scorebox/engine (restricted.py when it exists).
ENGINE_FILES: tuple[str, ...] = ("contract.py", "checks.py")
OPTIONAL_ENGINE_FILES: tuple[str, ...] = ("restricted.py",)
PULL_TIMEOUT_SECONDS = 180.0
BOOTSTRAP_TIMEOUT_SECONDS = 3600.0
BUILD_TIMEOUT_SECONDS = 3600.0
_IMPORT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# ---------------------------------------------------------------- pure pieces


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
        version = version_of(package.wheel)
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
                PackageInfo(package.import_name, version_of(package.wheel), "wheel", package.wheel)
            )
        elif package.debian_package is not None:
            out.append(PackageInfo(package.import_name, None, "debian", package.debian_package))
    return out


def bootstrap_tag(packages: Sequence[str], arch: str) -> str:
    """The tag of a debootstrapped base holding ``packages``."""
    recipe = json.dumps([BOOTSTRAP_RECIPE, SUITE, "minbase", arch, list(packages), STAND_INS])
    return f"{BASE_REPOSITORY}:{SUITE}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def mirrors_from_sources_list(text: str, suite: str = SUITE) -> list[str]:
    """Mirror URIs serving ``suite`` main in one-line ``sources.list`` syntax."""
    mirrors = []
    for raw in text.splitlines():
        fields = raw.split("#", 1)[0].split()
        if not fields or fields[0] != "deb":
            continue
        rest = fields[1:]
        if rest and rest[0].startswith("["):  # options: "[a=b]" or "[ a=b ]"
            while rest and not rest[0].endswith("]"):
                rest = rest[1:]
            rest = rest[1:]
        if len(rest) >= 3 and rest[1] == suite and "main" in rest[2:]:
            mirrors.append(rest[0])
    return mirrors


def _deb822_stanzas(text: str) -> list[dict[str, str]]:
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    key: str | None = None
    for raw in [*text.splitlines(), ""]:
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if current:
                stanzas.append(current)
            current, key = {}, None
        elif raw[0] in " \t":
            if key is not None:
                current[key] += " " + raw.strip()
        else:
            name, sep, value = raw.partition(":")
            if sep:
                key = name.strip().lower()
                current[key] = value.strip()
    return stanzas


def mirrors_from_deb822(text: str, suite: str = SUITE) -> list[str]:
    """Mirror URIs serving ``suite`` main in deb822 (``*.sources``) syntax."""
    mirrors = []
    for stanza in _deb822_stanzas(text):
        if stanza.get("enabled", "yes").lower() == "no":
            continue
        if "deb" not in stanza.get("types", "").split():
            continue
        if (
            suite in stanza.get("suites", "").split()
            and "main" in stanza.get("components", "").split()
        ):
            mirrors.extend(stanza.get("uris", "").split())
    return mirrors


def find_mirror(apt_dir: Path, suite: str) -> str | None:
    """The first http(s) mirror serving ``suite`` main in the apt sources under ``apt_dir``."""
    files = [apt_dir / "sources.list"]
    parts = apt_dir / "sources.list.d"
    if parts.is_dir():
        files += sorted(p for p in parts.iterdir() if p.suffix in {".list", ".sources"})
    for path in files:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        parse = mirrors_from_deb822 if path.suffix == ".sources" else mirrors_from_sources_list
        for uri in parse(text, suite):
            if uri.startswith(("http://", "https://")):
                return uri.rstrip("/")
    return None


def apt_sources(apt_dir: Path = Path("/etc/apt")) -> list[str]:
    """``sources.list`` lines for the bootstrapped image, from the host's mirrors when it
    has bookworm ones (first line: the main suite), else deb.debian.org."""
    lines = [f"deb {find_mirror(apt_dir, SUITE) or DEFAULT_MIRROR} {SUITE} main"]
    for suite in (f"{SUITE}-updates", f"{SUITE}-security"):
        mirror = find_mirror(apt_dir, suite)
        if mirror:
            lines.append(f"deb {mirror} {suite} main")
    return lines


def stand_in_control(name: str) -> str:
    """``DEBIAN/control`` of an empty package standing in for ``name`` (see STAND_INS)."""
    return (
        f"Package: {name}\nVersion: 0.0~scorebox1\nArchitecture: all\nSection: misc\n"
        "Priority: optional\nMaintainer: scorebox <noreply@scorebox.invalid>\n"
        f"Description: empty stand-in for {name} in the scorebox sandbox\n"
        " Only needed to build its dependents; kept out of the sandbox image.\n"
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
    python_tag, platform_tag = parts[-3], parts[-1]
    python_ok = any(t in {"py3", "cp311"} for t in python_tag.split("."))
    platform_ok = platform_tag == "any" or (
        arch in platform_tag and "linux" in platform_tag and "musl" not in platform_tag
    )
    return (
        _normalize(parts[0]) == _normalize(name)
        and (not version or parts[1] == version)
        and python_ok
        and platform_ok
    )


def manylinux_platforms(arch: str) -> list[str]:
    """pip ``--platform`` tags a bookworm (glibc 2.36) image accepts, newest first."""
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(36, 16, -1)]
    tags.append(f"manylinux2014_{arch}")
    if arch in {"x86_64", "i686"}:
        tags += [f"manylinux2010_{arch}", f"manylinux1_{arch}"]
    return tags


def assemble_context(dest: Path, image_dir: Path, engine_dir: Path, wheels: Sequence[Path]) -> None:
    """Write the build context to ``dest`` (replacing it): Dockerfile, ``opt/scorebox/``
    and ``stand-ins/``.

    ``opt/scorebox/engine/__init__.py`` is empty: the host's package init (and
    everything it would pull in) never enters the image.
    """
    if dest.exists():
        shutil.rmtree(dest)
    opt = dest / "opt" / "scorebox"
    (opt / "engine").mkdir(parents=True)
    for required in (image_dir / "Dockerfile", image_dir / "harness.py"):
        if not required.is_file():
            raise SandboxError(f"{required} is missing: the sandbox image cannot be built")
    shutil.copyfile(image_dir / "Dockerfile", dest / "Dockerfile")
    shutil.copyfile(image_dir / "harness.py", opt / "harness.py")
    (opt / "engine" / "__init__.py").write_bytes(b"")
    for name in ENGINE_FILES + OPTIONAL_ENGINE_FILES:
        source = engine_dir / name
        if source.is_file():
            shutil.copyfile(source, opt / "engine" / name)
        elif name in ENGINE_FILES:
            raise SandboxError(f"{source} is missing: the sandbox image cannot be built")
    shutil.copytree(
        image_dir / "okareo",
        opt / "okareo",
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


# ---------------------------------------------------------------- docker CLI

_UNREACHABLE_MARKERS = (
    "cannot connect to the docker daemon",
    "is the docker daemon running",
    "error during connect",
)


class DockerCLI:
    """The ``docker`` command, pointed at ``docker_host`` when set; errors become SandboxError."""

    def __init__(self, docker_host: str | None = None) -> None:
        self.env = dict(os.environ)
        if docker_host:
            self.env["DOCKER_HOST"] = docker_host
        self.where = self.env.get("DOCKER_HOST") or "the default socket"

    def _error(self, args: Sequence[str], output: str) -> SandboxError:
        lowered = output.lower()
        tail = " ".join(output.strip().splitlines()[-3:])[-600:]
        if "permission denied" in lowered and "docker" in lowered and "sock" in lowered:
            return DockerUnavailableError(
                f"Docker engine at {self.where} refused access: add your user to the `docker` "
                f"group or run as root ({tail})"
            )
        if any(marker in lowered for marker in _UNREACHABLE_MARKERS):
            return DockerUnavailableError(
                f"Docker engine not reachable at {self.where}: start it (`dockerd`, or "
                f"`scripts/dev.sh setup`) or set SCOREBOX_DOCKER_HOST ({tail})"
            )
        return SandboxError(f"`docker {' '.join(args[:2])}` failed: {tail}")

    def run(
        self,
        *args: str,
        timeout: float = 120.0,
        check: bool = True,
        stdin: IO[bytes] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``docker args...`` and capture its output."""
        try:
            proc = subprocess.run(
                ["docker", *args],
                stdin=stdin,
                capture_output=True,
                text=True,
                env=self.env,
                timeout=timeout,
                check=False,
            )
        except FileNotFoundError as exc:
            raise DockerUnavailableError(
                "the `docker` command is not installed: install Docker (`apt-get install "
                "docker.io`, or `scripts/dev.sh setup`)"
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise SandboxError(f"`docker {args[0]}` did not finish within {timeout:.0f} s") from exc
        if check and proc.returncode != 0:
            raise self._error(args, proc.stderr + proc.stdout)
        return proc

    def stream(self, args: Sequence[str], log: Log, timeout: float) -> None:
        """Run ``docker args...``, passing each output line to ``log``."""
        _stream(["docker", *args], log, timeout, self.env, on_error=self._error)

    def check_engine(self) -> str:
        """The engine's version; DockerUnavailableError when it cannot be reached."""
        return self.run("version", "--format", "{{.Server.Version}}", timeout=30).stdout.strip()

    def inspect(self, ref: str) -> dict[str, Any] | None:
        """``docker image inspect`` of ``ref``, or None when there is no such image."""
        proc = self.run("image", "inspect", ref, check=False, timeout=60)
        if proc.returncode != 0:
            if "no such image" in (proc.stderr + proc.stdout).lower():
                return None
            raise self._error(("image", "inspect"), proc.stderr)
        found: list[dict[str, Any]] = json.loads(proc.stdout)
        return found[0] if found else None

    def image_id(self, ref: str) -> str | None:
        """The id of image ``ref``, or None when it is absent."""
        found = self.inspect(ref)
        return str(found["Id"]) if found else None

    def pull(self, ref: str, log: Log) -> bool:
        """Try to pull ``ref``; False (after logging why) when the registry cannot serve it."""
        log(f"pulling {ref} ...")
        try:
            proc = self.run("pull", "--quiet", ref, check=False, timeout=PULL_TIMEOUT_SECONDS)
        except SandboxError as exc:
            log(f"  pull failed: {exc}")
            return False
        if proc.returncode != 0:
            log(f"  pull failed: {' '.join(proc.stderr.split())[-300:]}")
            return False
        return True


def _stream(
    cmd: Sequence[str],
    log: Log,
    timeout: float,
    env: Mapping[str, str],
    on_error: Callable[[Sequence[str], str], SandboxError],
) -> None:
    deadline = time.monotonic() + timeout
    tail: list[str] = []
    try:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env),
            text=True,
            errors="replace",
        )
    except FileNotFoundError as exc:
        raise SandboxError(f"`{cmd[0]}` is not installed") from exc
    assert proc.stdout is not None
    with proc:
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            log(line)
            tail = [*tail[-39:], line]
            if time.monotonic() > deadline:
                proc.kill()
                raise SandboxError(f"`{' '.join(cmd[:2])}` did not finish within {timeout:.0f} s")
        code = proc.wait()
    if code != 0:
        raise on_error(list(cmd[1:]) if cmd[0] == "docker" else list(cmd), "\n".join(tail))


# ---------------------------------------------------------------- build steps


@dataclass(frozen=True)
class BaseImage:
    """The image the Dockerfile starts from."""

    ref: str
    image_id: str
    complete: bool  # holds every Debian package already: the build needs no network


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


def source_dirs() -> tuple[Path, Path]:
    """``(sandbox_images/python, engine)`` of this checkout."""
    engine_dir = Path(__file__).resolve().parents[1]
    image_dir = engine_dir.parent / "sandbox_images" / "python"
    if not (image_dir / "Dockerfile").is_file():
        raise SandboxError(
            f"sandbox image sources not found at {image_dir}: build the image from a source "
            "checkout of scorebox (`scripts/dev.sh setup`)"
        )
    return image_dir, engine_dir


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
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600)
            found = sorted(p for p in cache.iterdir() if wheel_matches(p.name, requirement, arch))
            if proc.returncode != 0 or not found:
                tail = " ".join((proc.stderr or proc.stdout).split())[-400:]
                raise SandboxError(
                    f"could not download the wheel {requirement} for cp311/{arch}: PyPI must be "
                    f"reachable for the first build (later builds use {cache}). pip said: {tail}"
                )
        wheels.append(found[-1])
    return wheels


def _clear_rootfs(rootfs: Path) -> None:
    """Unmount whatever is mounted inside ``rootfs`` (a failed run may leave /proc), remove it."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        mounts = []
    prefix = str(rootfs.resolve()) + "/"
    targets = [line.split()[1] for line in mounts if len(line.split()) > 1]
    for target in sorted((t for t in targets if t.startswith(prefix)), reverse=True):
        subprocess.run(["umount", "-l", target], capture_output=True, check=False)
    if rootfs.exists():
        shutil.rmtree(rootfs)


def _slim_rootfs(rootfs: Path) -> None:
    """Drop apt lists, caches, logs, docs and the host's network files from a new rootfs."""
    for pattern in (
        "var/lib/apt/lists/*",
        "var/cache/apt/*.bin",
        "var/cache/apt/archives/*.deb",
        "var/log/*.log",
        "var/log/apt/*",
        "usr/share/man/*",
        "usr/share/info/*",
        "tmp/*",
        "var/tmp/*",
    ):
        for path in rootfs.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                if path.name != "partial":
                    shutil.rmtree(path)
            else:
                path.unlink()
    for path in (rootfs / "usr/share/doc").glob("*/*"):
        if path.name != "copyright" and (path.is_file() or path.is_symlink()):
            path.unlink()
    for name in ("etc/resolv.conf", "etc/hostname"):  # docker provides both at run time
        target = rootfs / name
        target.unlink(missing_ok=True)
        target.write_bytes(b"")


def _install_in_rootfs(
    rootfs: Path, packages: Sequence[str], sources: Sequence[str], log: Log
) -> None:
    """apt-get install ``packages`` (and the stand-ins) inside a fresh minbase rootfs."""
    (rootfs / "etc/apt/sources.list").write_text("".join(f"{line}\n" for line in sources))
    resolv = rootfs / "etc/resolv.conf"
    resolv.unlink(missing_ok=True)
    if Path("/etc/resolv.conf").exists():
        shutil.copyfile("/etc/resolv.conf", resolv)
    debs = []
    for name in STAND_INS:
        control = rootfs / "tmp/stand-ins" / name / "DEBIAN" / "control"
        control.parent.mkdir(parents=True)
        for directory in (control.parent, control.parent.parent):
            directory.chmod(0o755)
        control.write_text(stand_in_control(name))
        debs.append(f"/tmp/stand-ins/{name}.deb")
    env = {
        "PATH": _IMPORT_PATH.partition("=")[2],
        "DEBIAN_FRONTEND": "noninteractive",
        "LC_ALL": "C",
    }
    steps = [
        *(["dpkg-deb", "--build", deb.removesuffix(".deb"), deb] for deb in debs),
        ["apt-get", "update"],
        ["apt-get", "--yes", "upgrade"],
        ["apt-get", "install", "--yes", "--no-install-recommends", *debs, *packages],
        ["apt-mark", "hold", *STAND_INS],
        ["apt-get", "clean"],
    ]

    def failed(args: Sequence[str], tail: str) -> SandboxError:
        return SandboxError(f"`{' '.join(args[2:5])} ...` in the new root failed: {tail[-1200:]}")

    subprocess.run(["mount", "-t", "proc", "proc", str(rootfs / "proc")], check=True)
    try:
        for step in steps:
            _stream(["chroot", str(rootfs), *step], log, BOOTSTRAP_TIMEOUT_SECONDS, env, failed)
    finally:
        subprocess.run(["umount", "-l", str(rootfs / "proc")], capture_output=True, check=False)


def bootstrap_base(
    cli: DockerCLI, tag: str, packages: Sequence[str], rootfs: Path, log: Log
) -> None:
    """debootstrap a bookworm minbase, apt-get ``packages`` into it and import it as ``tag``."""
    if os.geteuid() != 0:
        raise SandboxError(
            "no base image: bootstrapping bookworm with debootstrap needs root. Run "
            "`sudo scorebox image build`, or load debian:bookworm-slim (`docker pull` or "
            "`docker load`), or pass a present base with --base REF"
        )
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin")
    if debootstrap is None:
        raise SandboxError(
            "no base image and debootstrap is not installed: `apt-get install debootstrap` "
            f"(or `scripts/dev.sh setup`), or make {REGISTRY_BASE} available"
        )
    sources = apt_sources()
    mirror = sources[0].split()[1]
    cmd = [debootstrap, "--variant=minbase"]
    keyring = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
    if keyring.is_file():
        cmd.append(f"--keyring={keyring}")
    cmd += [SUITE, str(rootfs), mirror]

    def failed(args: Sequence[str], tail: str) -> SandboxError:
        detail = rootfs / "debootstrap" / "debootstrap.log"
        extra = detail.read_text(errors="replace")[-800:] if detail.is_file() else ""
        return SandboxError(f"debootstrap failed: {tail[-800:]}\n{extra}")

    _clear_rootfs(rootfs)
    log(f"bootstrapping {SUITE} from {mirror} into {rootfs} (several minutes) ...")
    try:
        _stream(cmd, log, BOOTSTRAP_TIMEOUT_SECONDS, os.environ, on_error=failed)
        _install_in_rootfs(rootfs, packages, sources, log)
        _slim_rootfs(rootfs)
        log(f"importing the root file system as {tag} ...")
        tar = subprocess.Popen(
            ["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE
        )
        assert tar.stdout is not None
        with tar:
            cli.run(
                "import", "--change", f"ENV {_IMPORT_PATH}",
                "--message", f"scorebox bootstrap {BOOTSTRAP_RECIPE}: {SUITE} from {mirror}",
                "-", tag, stdin=tar.stdout, timeout=BOOTSTRAP_TIMEOUT_SECONDS,
            )  # fmt: skip
            tar.stdout.close()
            if tar.wait() != 0:
                raise SandboxError(f"tar of {rootfs} failed with exit code {tar.returncode}")
    finally:
        _clear_rootfs(rootfs)


def resolve_base(
    cli: DockerCLI,
    requested: str | None,
    packages: Sequence[str],
    arch: str,
    build_dir: Path,
    log: Log,
) -> BaseImage:
    """The base to build on: ``requested``, else the registry's, else a bootstrapped one."""
    if requested:
        image_id = cli.image_id(requested)
        if image_id is None and cli.pull(requested, log):
            image_id = cli.image_id(requested)
        if image_id is None:
            raise SandboxError(f"base image {requested} is neither present nor pullable")
        return BaseImage(requested, image_id, complete=False)
    bootstrapped = bootstrap_tag(packages, arch)
    for ref, complete in ((REGISTRY_BASE, False), (bootstrapped, True)):
        image_id = cli.image_id(ref)
        if image_id is not None:
            return BaseImage(ref, image_id, complete)
    if cli.pull(REGISTRY_BASE, log) and (image_id := cli.image_id(REGISTRY_BASE)):
        return BaseImage(REGISTRY_BASE, image_id, complete=False)
    log(f"no registry base; bootstrapping {bootstrapped} with debootstrap")
    bootstrap_base(cli, bootstrapped, packages, build_dir / "rootfs", log)
    image_id = cli.image_id(bootstrapped)
    if image_id is None:
        raise SandboxError(f"{bootstrapped} is missing right after its import")
    return BaseImage(bootstrapped, image_id, complete=True)


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
    build_dir = image_dir / "build"
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
