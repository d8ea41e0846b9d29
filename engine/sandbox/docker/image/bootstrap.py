"""The base image: debian:bookworm-slim when present or pullable, else a debootstrapped bookworm."""

from __future__ import annotations

import os
import shutil
import subprocess  # nosec B404
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.errors import SandboxError
from engine.sandbox.docker.image.apt import apt_sources, stand_in_control
from engine.sandbox.docker.image.constants import (
    _IMPORT_PATH,
    BOOTSTRAP_RECIPE,
    BOOTSTRAP_TIMEOUT_SECONDS,
    REGISTRY_BASE,
    STAND_INS,
    SUITE,
    Log,
)
from engine.sandbox.docker.image.docker_cli import DockerCLI, _stream
from engine.sandbox.docker.image.packages import bootstrap_tag


@dataclass(frozen=True)
class BaseImage:
    """The image the Dockerfile starts from."""

    ref: str
    image_id: str
    complete: bool  # holds every Debian package already: the build needs no network


def _clear_rootfs(rootfs: Path) -> None:
    """Unmount whatever is mounted inside ``rootfs`` (a failed run may leave /proc), remove it."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        mounts = []
    prefix = str(rootfs.resolve()) + "/"
    targets = [line.split()[1] for line in mounts if len(line.split()) > 1]
    for target in sorted((t for t in targets if t.startswith(prefix)), reverse=True):
        # bandit B603 B607: mount/umount from PATH, argv built here, as root building the image
        subprocess.run(["umount", "-l", target], capture_output=True, check=False)  # nosec B603 B607
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
        # bandit B108: a path inside the image being built, not on the host
        debs.append(f"/tmp/stand-ins/{name}.deb")  # nosec B108
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

    # bandit B603 B607: mount/umount from PATH, argv built here, as root building the image
    subprocess.run(["mount", "-t", "proc", "proc", str(rootfs / "proc")], check=True)  # nosec B603 B607
    try:
        for step in steps:
            _stream(["chroot", str(rootfs), *step], log, BOOTSTRAP_TIMEOUT_SECONDS, env, failed)
    finally:
        # bandit B603 B607: mount/umount from PATH, argv built here, as root building the image
        subprocess.run(["umount", "-l", str(rootfs / "proc")], capture_output=True, check=False)  # nosec B603 B607


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
        # bandit B603 B607: argv is a list built here (no shell); no tenant input reaches it
        tar = subprocess.Popen(  # nosec B603 B607
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
