"""The sandbox image builder's pure pieces: package lists, apt sources, hashing, context."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from engine.errors import SandboxError
from engine.sandbox.docker import image
from engine.validation.rules import SANDBOX_PACKAGES, SandboxPackage

ROOT = Path(__file__).resolve().parents[2]


def test_debian_packages_hold_python_tini_and_every_contract_package() -> None:
    packages = image.debian_packages()
    assert packages[:2] == ("python3", "tini")
    for package in SANDBOX_PACKAGES:
        if package.debian_package:
            assert package.debian_package in packages
    assert len(set(packages)) == len(packages)


def test_wheels_are_pinned_at_the_host_version() -> None:
    requirements = image.wheel_requirements()
    version = image.host_version("RestrictedPython")
    assert version is not None
    assert f"RestrictedPython=={version}" in requirements
    wheel_names = {p.wheel for p in SANDBOX_PACKAGES if p.wheel}
    assert {r.partition("==")[0] for r in requirements} == wheel_names


def test_wheel_requirement_unpinned_when_not_installed() -> None:
    packages = (SandboxPackage("foo", None, wheel="foo-bar"), SandboxPackage("x", "python3-x"))
    assert image.wheel_requirements(packages, lambda _: None) == ("foo-bar",)
    assert image.wheel_requirements(packages, lambda _: "1.2") == ("foo-bar==1.2",)


def test_sandbox_packages_list_every_import_name_with_wheel_versions() -> None:
    listed = {p.import_name: p for p in image.sandbox_packages()}
    assert set(listed) == {p.import_name for p in SANDBOX_PACKAGES}
    assert listed["RestrictedPython"].version == image.host_version("RestrictedPython")
    assert listed["numpy"].version is None
    assert listed["numpy"].to_dict() == {
        "import_name": "numpy",
        "version": None,
        "source": "debian",
        "distribution": "python3-numpy",
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("deb http://deb.debian.org/debian bookworm main\n", ["http://deb.debian.org/debian"]),
        ("deb [arch=amd64 signed-by=/k.gpg] http://m/debian bookworm main contrib\n", ["http://m/debian"]),
        ("deb [ arch=amd64 ] http://m/debian bookworm main\n", ["http://m/debian"]),
        ("# deb http://m/debian bookworm main\n", []),
        ("deb-src http://m/debian bookworm main\n", []),
        ("deb http://m/debian bookworm-updates main\n", []),
        ("deb http://m/debian bookworm contrib\n", []),
        ("deb http://m/ubuntu jammy main\ndeb http://a/debian bookworm main\n", ["http://a/debian"]),
    ],
)  # fmt: skip
def test_one_line_sources(text: str, expected: list[str]) -> None:
    assert image.mirrors_from_sources_list(text) == expected


DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main

Types: deb deb-src
URIs: http://disabled/debian
Suites: bookworm
Components: main
Enabled: no
"""


def test_deb822_sources() -> None:
    assert image.mirrors_from_deb822(DEB822) == ["http://deb.debian.org/debian"]
    assert image.mirrors_from_deb822(DEB822, "bookworm-security") == [
        "http://deb.debian.org/debian-security"
    ]
    assert image.mirrors_from_deb822("Types: deb\nURIs: http://x\nSuites: trixie\n") == []


def test_apt_sources_from_host_files(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(DEB822)
    (tmp_path / "sources.list.d" / "other.list.disabled").write_text("deb http://no bookworm main")
    assert image.apt_sources(tmp_path) == [
        "deb http://deb.debian.org/debian bookworm main",
        "deb http://deb.debian.org/debian bookworm-updates main",
        "deb http://deb.debian.org/debian-security bookworm-security main",
    ]


def test_apt_sources_fall_back_to_deb_debian_org(tmp_path: Path) -> None:
    (tmp_path / "sources.list").write_text("deb http://archive.ubuntu.com/ubuntu jammy main\n")
    assert image.apt_sources(tmp_path) == [f"deb {image.DEFAULT_MIRROR} bookworm main"]


def test_hash_context_covers_contents_paths_and_inputs(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.py").write_text("x = 1\n")
    base = image.hash_context(tmp_path, {"base": "b"})
    assert base == image.hash_context(tmp_path, {"base": "b"})
    assert image.hash_context(tmp_path, {"base": "c"}) != base
    (tmp_path / "a" / "f.py").write_text("x = 2\n")
    changed = image.hash_context(tmp_path, {"base": "b"})
    assert changed != base
    (tmp_path / "a" / "f.py").rename(tmp_path / "a" / "g.py")
    assert image.hash_context(tmp_path, {"base": "b"}) not in {base, changed}


def test_bootstrap_tag_depends_on_packages_and_arch() -> None:
    tag = image.bootstrap_tag(("python3", "tini"), "x86_64")
    assert tag.startswith("scorebox-base:bookworm-")
    assert tag == image.bootstrap_tag(("python3", "tini"), "x86_64")
    assert tag != image.bootstrap_tag(("python3",), "x86_64")
    assert tag != image.bootstrap_tag(("python3", "tini"), "aarch64")


RF = "rapidfuzz-3.14.6"
ML = "manylinux_2_17_x86_64.manylinux2014_x86_64"


@pytest.mark.parametrize(
    ("filename", "requirement", "ok"),
    [
        ("RestrictedPython-9.0-py3-none-any.whl", "RestrictedPython==9.0", True),
        ("restrictedpython-9.0-py3-none-any.whl", "RestrictedPython==9.0", True),
        ("RestrictedPython-8.1-py3-none-any.whl", "RestrictedPython==9.0", False),
        (f"{RF}-cp311-cp311-{ML}.whl", "rapidfuzz==3.14.6", True),
        (f"{RF}-cp312-cp312-{ML}.whl", "rapidfuzz==3.14.6", False),
        ("rapidfuzz-3.14.6-cp311-cp311-manylinux_2_17_aarch64.whl", "rapidfuzz==3.14.6", False),
        ("rapidfuzz-3.14.6-cp311-cp311-musllinux_1_2_x86_64.whl", "rapidfuzz==3.14.6", False),
        ("rapidfuzz-3.14.6-cp311-cp311-manylinux_2_17_x86_64.whl", "rapidfuzz", True),
        ("rapidfuzz-3.14.6.tar.gz", "rapidfuzz", False),
    ],
)  # fmt: skip
def test_wheel_matches(filename: str, requirement: str, ok: bool) -> None:
    assert image.wheel_matches(filename, requirement, "x86_64") is ok


def test_manylinux_platforms_stay_within_bookworm_glibc() -> None:
    tags = image.manylinux_platforms("x86_64")
    assert tags[0] == "manylinux_2_36_x86_64"
    assert "manylinux2014_x86_64" in tags
    assert all("aarch64" in t for t in image.manylinux_platforms("aarch64"))


def test_stand_in_control_is_an_empty_arch_all_package() -> None:
    control = image.stand_in_control("python3-pythran")
    assert control.startswith("Package: python3-pythran\n")
    assert "Architecture: all\n" in control
    assert "Depends" not in control
    assert control.endswith("\n")


def _wheel(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_assemble_context_layout(tmp_path: Path) -> None:
    wheel = _wheel(
        tmp_path / "demo-1.0-py3-none-any.whl",
        {"demo/__init__.py": "X = 1\n", "demo-1.0.dist-info/METADATA": "Name: demo\n"},
    )
    dest = tmp_path / "context"
    image_dir, engine_dir = image.source_dirs()
    image.assemble_context(dest, image_dir, engine_dir, [wheel])
    opt = dest / "opt" / "scorebox"
    assert (dest / "Dockerfile").read_bytes() == (image_dir / "Dockerfile").read_bytes()
    assert (opt / "harness.py").read_text() == image.LAUNCHER  # runs engine.harness
    assert not (opt / "gateway.py").exists()  # engine.harness.gateway now
    assert (opt / "engine" / "__init__.py").read_bytes() == b""  # never the host's
    contract = (engine_dir / "contract" / "__init__.py").read_bytes()
    assert (opt / "engine" / "contract" / "__init__.py").read_bytes() == contract
    assert (opt / "engine" / "contract" / "checks.py").is_file()
    assert (opt / "engine" / "contract" / "restricted.py").is_file()
    # the carried folders whole, every module at any depth, verbatim
    for package in ("contract", "harness"):
        for path in (engine_dir / package).rglob("*.py"):
            rel = path.relative_to(engine_dir)
            assert (opt / "engine" / rel).read_bytes() == path.read_bytes(), rel
    for part in ("__main__.py", "channel.py", "child.py", "supervise.py", "gateway.py"):
        assert (opt / "engine" / "harness" / part).is_file()
    carried = {p.relative_to(opt / "engine").as_posix() for p in (opt / "engine").rglob("*.py")}
    assert carried == {"__init__.py", *image.carried_files(engine_dir)}
    assert (opt / "stand-in-modules" / "reward_kit" / "__init__.py").is_file()
    assert (opt / "engine" / "checks.py").is_file()  # the path check files import
    assert not (opt / "engine" / "contract" / "rules.py").exists()  # host-only
    assert not (opt / "engine" / "settings.py").exists()
    assert (opt / "okareo" / "checks.py").is_file()
    assert not list(opt.rglob("__pycache__"))
    assert (opt / "site-packages" / "demo" / "__init__.py").read_text() == "X = 1\n"
    for name in image.STAND_INS:
        assert (dest / "stand-ins" / name / "DEBIAN" / "control").is_file()
    before = image.hash_context(dest, {})
    image.assemble_context(dest, image_dir, engine_dir, [wheel])  # replaces, same content
    assert image.hash_context(dest, {}) == before


def test_assemble_context_needs_the_harness(tmp_path: Path) -> None:
    image_dir = tmp_path / "python"
    image_dir.mkdir()
    (image_dir / "Dockerfile").write_text("FROM scratch\n")
    engine_dir = tmp_path / "engine"
    shutil.copytree(ROOT / "engine" / "contract", engine_dir / "contract")
    (engine_dir / "checks.py").write_text("")
    with pytest.raises(SandboxError, match=r"harness/__init__\.py is missing"):
        image.assemble_context(tmp_path / "ctx", image_dir, engine_dir, [])


def test_a_new_module_in_a_carried_folder_is_carried(tmp_path: Path) -> None:
    engine_dir = tmp_path / "engine"
    for package in ("contract", "harness"):
        shutil.copytree(ROOT / "engine" / package, engine_dir / package)
    (engine_dir / "checks.py").write_text("")
    (engine_dir / "harness" / "extra" / "deep.py").parent.mkdir()
    (engine_dir / "harness" / "extra" / "deep.py").write_text("X = 1\n")
    (engine_dir / "harness" / "__pycache__" / "stale.py").parent.mkdir(exist_ok=True)
    (engine_dir / "harness" / "__pycache__" / "stale.py").write_text("")
    files = image.carried_files(engine_dir)
    assert "harness/extra/deep.py" in files
    assert "checks.py" in files
    assert not any("__pycache__" in name for name in files)


def test_unreachable_engine_error_names_the_fix() -> None:
    cli = image.DockerCLI("unix:///nonexistent/docker.sock")
    error = cli._error(
        ("version",),
        "Cannot connect to the Docker daemon at unix:///nonexistent/docker.sock. "
        "Is the docker daemon running?",
    )
    assert type(error).__name__ == "DockerUnavailableError"
    assert "SCOREBOX_DOCKER_HOST" in str(error)
    assert "unix:///nonexistent/docker.sock" in str(error)
