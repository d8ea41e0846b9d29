"""Okareo's own SDK tests, shipped in the ``okareo`` wheel, run unchanged against scorebox.

``okareo_tests.test_check_versioning`` and ``okareo_tests.test_checks`` are the peer's
tests of its checks API (versions, delete and reuse, predefined checks, generation,
refusing a check that imports a network client). They run from the installed wheel with
``pytest --pyargs``, in the SDK's venv, pointed at a live ``scorebox serve`` with the
scripted LLM (``OKAREO_BASE_URL``, ``OKAREO_API_KEY``). All 25 must pass; none may skip.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.fake_llm import Reply
from tests.okareo.conftest import Server, _must_run

pytestmark = pytest.mark.docker

MODULES = ("okareo_tests.test_check_versioning", "okareo_tests.test_checks")
EXPECTED = 25
#: The scripted LLM's check for test_generate_and_create_check's description.
GENERATED = """\
def evaluate(model_output: str) -> bool:
    return len(model_output) >= 20
"""


def _ensure_runner(python: str) -> None:
    """pytest in the SDK's venv (the wheel ships its tests, not their runner), and
    ``requests``, which the shipped ``checks/malicious_check.py`` imports client-side:
    both installed by ``scripts/okareo_venv.sh``."""
    probe = subprocess.run(
        [python, "-c", "import pytest, requests"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        message = f"run scripts/okareo_venv.sh (pytest, requests missing):\n{probe.stderr}"
        if _must_run():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def test_okareo_shipped_check_tests_pass(okareo_server: Server) -> None:
    _ensure_runner(okareo_server.python)
    okareo_server.llm.responder = lambda request: Reply(text=f"```python\n{GENERATED}```")
    workdir = okareo_server.workdir / "shipped"
    workdir.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "OKAREO_API_KEY": okareo_server.key,
        "OKAREO_BASE_URL": okareo_server.url,
    }
    runner = [okareo_server.python, "-m", "pytest", "-p", "no:cacheprovider", "-rA"]
    try:
        proc = subprocess.run(
            [*runner, "--pyargs", *MODULES],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    finally:
        okareo_server.llm.responder = None
    output = proc.stdout + proc.stderr[-3000:]
    assert proc.returncode == 0, output
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed is not None and int(passed.group(1)) == EXPECTED, output
    for word in ("skipped", "failed", "error", "xfail", "deselected"):
        assert not re.search(rf"\d+ {word}", proc.stdout), output
