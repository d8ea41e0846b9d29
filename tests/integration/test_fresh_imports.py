"""What a fresh interpreter imports: ``--help`` loads no SDK, and the shared names load no
pydantic. Checked in a new process's ``sys.modules``, not by timing (the machine is noisy)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "args", [["--help"], ["run", "--help"], ["check", "push", "--help"], ["run", "list", "--help"]]
)
def test_help_does_not_import_openai(args: list[str]) -> None:
    code = (
        "import sys\n"
        "from engine.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        "for name in ('openai', 'engine.builtins', 'httpx', 'sqlalchemy', 'fastapi'):\n"
        "    assert name not in sys.modules, name\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_names_load_without_pydantic() -> None:
    code = "import sys, engine.names; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
