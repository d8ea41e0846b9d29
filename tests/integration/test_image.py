"""The built sandbox image: user, PID 1, packages, shims, read-only files, idempotent builds."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest

from engine.sandbox.docker.image import HASH_LABEL, build_image, host_version, image_status
from engine.settings import Settings
from engine.validation.rules import SANDBOX_PACKAGES
from tests.conftest import TEST_LABEL

pytestmark = pytest.mark.docker

SANDBOX_PATH = "import sys; sys.path[:0] = ['/opt/scorebox', '/opt/scorebox/site-packages']; "


def run_in_image(settings: Settings, code: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``python3 -I -c code`` in a throwaway container, hardened roughly as the backend does."""
    return subprocess.run(
        [
            "docker", "run", "--rm", "--network", "none", "--label", f"{TEST_LABEL}=1",
            "--read-only", "--tmpfs", "/tmp:size=16m,noexec,nosuid", "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges", *extra,
            settings.image, "python3", "-I", "-c", code,
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def inspect(settings: Settings) -> dict[str, Any]:
    out = subprocess.run(
        ["docker", "image", "inspect", settings.image],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    found: list[dict[str, Any]] = json.loads(out.stdout)
    return found[0]


def test_image_config(docker_settings: Settings) -> None:
    config = inspect(docker_settings)["Config"]
    assert config["Entrypoint"] == ["/usr/bin/tini", "--"]
    assert config["Cmd"] == ["python3", "-I", "/opt/scorebox/harness.py"]
    assert config["User"].split(":")[0] == "10001"
    assert config["WorkingDir"] == "/tmp"
    assert "PYTHONDONTWRITEBYTECODE=1" in config["Env"]
    assert len(config["Labels"][HASH_LABEL]) == 64


def test_runs_as_sandbox_user_under_tini(docker_settings: Settings) -> None:
    code = (
        "import os, pwd; "
        "print(os.getuid(), os.getgid(), pwd.getpwuid(os.getuid()).pw_name); "
        "print(open('/proc/1/cmdline').read().split(chr(0))[0])"
    )
    proc = run_in_image(docker_settings, code)
    assert proc.returncode == 0, proc.stderr
    ids, pid1 = proc.stdout.splitlines()
    assert ids == "10001 10001 sandbox"
    assert pid1 == "/usr/bin/tini"


def test_every_sandbox_package_imports(docker_settings: Settings) -> None:
    names = [p.import_name for p in SANDBOX_PACKAGES]
    code = SANDBOX_PATH + (
        "import numpy, scipy, pandas, sklearn, sympy, regex, jsonschema, yaml, nltk, "
        "Levenshtein, rapidfuzz, RestrictedPython; "
        "import importlib; "
        f"[importlib.import_module(n) for n in {names!r}]; "
        "import scipy.optimize, scipy.stats, scipy.signal, scipy.interpolate; "
        "import sklearn.linear_model; "
        "import pandas as pd, numpy as np; "
        "print(pd.DataFrame({'a': np.arange(3)}).a.sum())"
    )
    proc = run_in_image(docker_settings, code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "3"


def test_no_compiler_and_no_nltk_corpora(docker_settings: Settings) -> None:
    code = (
        "import shutil, os; "
        "print([t for t in ('gcc', 'g++', 'cc', 'as', 'ld') if shutil.which(t)]); "
        "print(os.path.exists('/usr/share/nltk_data'))"
    )
    proc = run_in_image(docker_settings, code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]", "False"]


def test_restrictedpython_matches_the_host(docker_settings: Settings) -> None:
    code = SANDBOX_PATH + (
        "import importlib.metadata as m, RestrictedPython; "
        "print(m.version('RestrictedPython')); "
        "print(RestrictedPython.__file__)"
    )
    proc = run_in_image(docker_settings, code)
    assert proc.returncode == 0, proc.stderr
    version, location = proc.stdout.splitlines()
    assert version == host_version("RestrictedPython")
    assert location.startswith("/opt/scorebox/site-packages/")


def test_okareo_and_engine_shims(docker_settings: Settings) -> None:
    code = SANDBOX_PATH + (
        "from okareo.checks import CodeBasedCheck, CheckResponse, BaseCheck, ModelBasedCheck; "
        "import engine.checks, engine.contract; "
        "assert CodeBasedCheck is engine.checks.CodeBasedCheck; "
        "assert issubclass(CodeBasedCheck, BaseCheck); "
        "print(CheckResponse(score=1).score, open(engine.__file__).read() == '')"
    )
    proc = run_in_image(docker_settings, code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "True"]


def test_opt_scorebox_is_read_only_for_the_user_and_precompiled(docker_settings: Settings) -> None:
    code = (
        "import os, importlib.util; "
        "dirs = [d for d, _, _ in os.walk('/opt/scorebox')]; "
        "files = [os.path.join(d, f) for d, _, fs in os.walk('/opt/scorebox') for f in fs]; "
        "print(any(os.access(p, os.W_OK) for p in dirs + files)); "
        "print(all(os.stat(p).st_uid == 0 for p in dirs + files)); "
        "print(os.path.exists(importlib.util.cache_from_source('/opt/scorebox/engine/contract/__init__.py')))"
    )
    proc = run_in_image(docker_settings, code, "--read-only=false")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True", "True"]
    proc = run_in_image(docker_settings, "open('/opt/scorebox/x', 'w')", "--read-only=false")
    assert proc.returncode != 0
    assert "PermissionError" in proc.stderr


def test_no_setuid_binaries(docker_settings: Settings) -> None:
    code = (
        "import os, stat; "
        "print([os.path.join(d, f) for top in ('/usr', '/etc', '/opt') "
        "for d, _, fs in os.walk(top) for f in fs "
        "if not os.path.islink(os.path.join(d, f)) "
        "and os.stat(os.path.join(d, f)).st_mode & (stat.S_ISUID | stat.S_ISGID)])"
    )
    proc = run_in_image(docker_settings, code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_rebuild_with_unchanged_inputs_is_skipped(docker_settings: Settings) -> None:
    first = build_image(docker_settings, log=lambda _line: None)
    started = time.monotonic()
    second = build_image(docker_settings, log=lambda _line: None)
    assert not second.built
    assert second.image_id == first.image_id
    assert second.content_hash == first.content_hash
    assert time.monotonic() - started < 30
    status = image_status(docker_settings)
    assert status.present
    assert status.image_id == second.image_id
    assert status.content_hash == second.content_hash


def test_okareo_shim_covers_the_sdk_exports(docker_settings: Settings) -> None:
    """What ``okareo.checks`` exports in the SDK (0.0.162) imports and behaves in the image."""
    code = SANDBOX_PATH + (
        "from okareo.checks import (BaseCheck, CheckOutputType, CheckResponse, CodeBasedCheck, "
        "ModelBasedCheck); "
        "m = ModelBasedCheck(prompt_template='Is {model_output} polite?', "
        "check_type=CheckOutputType.PASS_FAIL, is_audio=False); "
        "print(sorted(m.check_config().items())); "
        "print([t.value for t in CheckOutputType]); "
        "print(CheckResponse(score=0.5, explanation='half').explanation)"
    )
    proc = run_in_image(docker_settings, code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "[('audio', False), ('prompt_template', 'Is {model_output} polite?'), "
        "('type', 'pass_fail')]",
        "['score', 'pass_fail', 'analysis']",
        "half",
    ]


def test_the_image_records_its_exact_versions_and_image_show_prints_them(
    docker_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The image records its Python and every Debian package and Python
    distribution at their exact versions; `scorebox image show` prints them."""
    from click.testing import CliRunner

    from engine.cli import main
    from engine.sandbox.docker.image import image_versions

    versions = image_versions(docker_settings)
    assert versions is not None
    # the record agrees with what the image itself says, asked independently
    proc = run_in_image(
        docker_settings,
        SANDBOX_PATH + "import platform; from importlib import metadata; "
        "print(platform.python_version()); print(metadata.version('rapidfuzz'))",
    )
    assert proc.returncode == 0, proc.stderr
    python, rapidfuzz = proc.stdout.split()
    assert versions.python == python
    assert versions.python_packages["rapidfuzz"] == rapidfuzz
    dpkg = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--label", f"{TEST_LABEL}=1",
         "--entrypoint", "dpkg-query", docker_settings.image,
         "-W", "-f=${Version}", "python3-numpy", "tini"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert versions.debian["python3-numpy"] + versions.debian["tini"] == dpkg.stdout
    assert len(versions.debian) > 50

    monkeypatch.setenv("SCOREBOX_IMAGE", docker_settings.image)
    result = CliRunner().invoke(main, ["image", "show", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["versions"]["python"] == python
    assert shown["versions"]["debian"]["python3-numpy"] == versions.debian["python3-numpy"]
    listed = CliRunner().invoke(main, ["image", "show", "--versions"])
    assert listed.exit_code == 0, listed.output
    assert f"python:   {python}" in listed.output
    assert "rapidfuzz" in listed.output and rapidfuzz in listed.output
    assert "python3-numpy" in listed.output
