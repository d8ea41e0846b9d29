"""`scorebox env wheel` against an sdist whose build code is hostile, under runc and runsc.

The build backend plants symlinks where the wheel is expected (the old bind-mounted
`/out`, the container's output folder, the wheel pip copies) pointing at the process's
environment and at a host file. The wheel comes back as a stream on the container's
stdout, so nothing the host can read but the container cannot ever reaches the
wheelhouse, and the build fails with a message that says why.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from engine.environments import wheels
from engine.environments.wheels import BuiltWheel, store_wheel
from engine.errors import EnvironmentBuildError
from engine.sandbox.docker.environments import _WHEEL_EMIT, wheel_of_stream
from engine.settings import Settings

HOST_SECRET = "sk-host-secret-7f3a9c"

BACKEND = """
import os, zipfile

MODE = {mode!r}
TARGET = {target!r}
NAME = "evil-0.1-py3-none-any.whl"


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, "evil-0.1.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as handle:
        handle.write("Metadata-Version: 2.1\\nName: evil\\nVersion: 0.1\\n")
    return "evil-0.1.dist-info"


def _real_wheel(path):
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("evil.py", "")
        wheel.writestr("evil-0.1.dist-info/METADATA",
                       "Metadata-Version: 2.1\\nName: evil\\nVersion: 0.1\\n")
        wheel.writestr("evil-0.1.dist-info/WHEEL",
                       "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
        wheel.writestr("evil-0.1.dist-info/RECORD", "")


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    for planted in ("/out/x.whl", "/tmp/scorebox-out/x.whl"):
        try:  # the attack that worked when /out was a host folder
            os.makedirs(os.path.dirname(planted), exist_ok=True)
            os.symlink(TARGET, planted)
        except OSError:
            pass
    if MODE == "link":  # the wheel pip copies is itself a link
        os.symlink(TARGET, os.path.join(wheel_directory, NAME))
    else:
        _real_wheel(os.path.join(wheel_directory, NAME))
    return NAME
"""


def _sdist(folder: Path, mode: str, target: str) -> Path:
    files = {
        "evil-0.1/pyproject.toml": textwrap.dedent(
            """\
            [build-system]
            requires = []
            build-backend = "backend"
            backend-path = ["."]
            """
        ),
        "evil-0.1/backend.py": BACKEND.format(mode=mode, target=target),
        "evil-0.1/PKG-INFO": "Metadata-Version: 2.1\nName: evil\nVersion: 0.1\n",
    }
    path = folder / "evil-0.1.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.docker
@pytest.mark.parametrize("mode", ["link", "planted"])
@pytest.mark.parametrize("target", ["/proc/self/environ", "host-file"])
def test_a_build_backend_planting_symlinks_gets_nothing_of_the_host_into_the_wheelhouse(
    docker_settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    target: str,
) -> None:
    from engine.sandbox.docker.environments import docker_environments

    secret_file = tmp_path / "host-secret.txt"
    secret_file.write_text(f"SCOREBOX_LLM_API_KEY={HOST_SECRET}\n")
    link_to = str(secret_file) if target == "host-file" else target
    monkeypatch.setenv("SCOREBOX_LLM_API_KEY", HOST_SECRET)  # in this process's environ
    sdist = _sdist(tmp_path, mode, link_to)
    wheelhouse = tmp_path / "wheelhouse"
    settings = docker_settings.model_copy(update={"packages_wheelhouse": wheelhouse})

    def local_sdist(requirement: Requirement, dest: Path, _: Settings) -> Path:
        copy = dest / sdist.name
        copy.write_bytes(sdist.read_bytes())
        return copy

    monkeypatch.setattr(wheels, "fetch_sdist", local_sdist)
    installer = docker_environments(settings).installer
    work = tmp_path / "work"
    with pytest.raises(EnvironmentBuildError) as refused:
        wheels.build_wheel("evil==0.1", settings, installer, work)  # type: ignore[arg-type]
    message = str(refused.value)
    assert "evil-0.1.tar.gz" in message
    # pip refuses a link it cannot read as a wheel; the emitter refuses two wheels
    expected = {"link": "exited with", "planted": "the build made 2 wheels"}[mode]
    assert expected in message, message
    stored = list(wheelhouse.rglob("*")) if wheelhouse.exists() else []
    assert stored == []
    for path in work.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert HOST_SECRET not in path.read_text(errors="replace"), path


def test_the_emitter_refuses_a_link_in_the_output_folder(tmp_path: Path) -> None:
    """The step that hands the wheel back reads only a regular file, without following."""
    out = tmp_path / "out"
    out.mkdir()
    secret = tmp_path / "secret"
    secret.write_text(HOST_SECRET)
    (out / "x-0.1-py3-none-any.whl").symlink_to(secret)
    script = _WHEEL_EMIT.replace(repr("/tmp/scorebox-out"), repr(str(out)))
    done = subprocess.run(
        [sys.executable, "-I", "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 4
    assert "not a regular file (a link?)" in done.stderr
    assert HOST_SECRET not in done.stdout


def test_the_emitted_stream_round_trips_and_a_forged_one_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr("evil.py", "x = 1\n" * 50_000)
    (out / "evil-0.1-py3-none-any.whl").write_bytes(buffer.getvalue())
    script = _WHEEL_EMIT.replace(repr("/tmp/scorebox-out"), repr(str(out)))
    done = subprocess.run(
        [sys.executable, "-I", "-c", script], capture_output=True, text=True, check=True
    )
    built = wheel_of_stream("pip said hello\n" + done.stdout, "evil-0.1.tar.gz", 1 << 20)
    assert built == BuiltWheel("evil-0.1-py3-none-any.whl", buffer.getvalue())
    forged = done.stdout.replace('"sha256": "', '"sha256": "0', 1)
    with pytest.raises(EnvironmentBuildError, match="does not match its own description"):
        wheel_of_stream(forged, "evil-0.1.tar.gz", 1 << 20)
    with pytest.raises(EnvironmentBuildError, match="no wheel"):
        wheel_of_stream(done.stdout + done.stdout, "evil-0.1.tar.gz", 1 << 20)


def test_storing_a_wheel_replaces_a_planted_link_and_never_follows_it(tmp_path: Path) -> None:
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    name = "evil-0.1-py3-none-any.whl"
    (wheelhouse / name).symlink_to(victim)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr("evil.py", "")
    path = store_wheel(BuiltWheel(name, buffer.getvalue()), "evil", wheelhouse)
    assert not path.is_symlink() and path.read_bytes() == buffer.getvalue()
    assert victim.read_text() == "keep me"
    assert sorted(p.name for p in wheelhouse.iterdir()) == [name]
    with pytest.raises(EnvironmentBuildError, match="a wheel of another distribution"):
        store_wheel(BuiltWheel("other-1.0-py3-none-any.whl", buffer.getvalue()), "evil", wheelhouse)
    with pytest.raises(EnvironmentBuildError, match="not a zip archive"):
        store_wheel(BuiltWheel(name, os.environ.get("HOME", "x").encode()), "evil", wheelhouse)
