"""``scorebox audit`` in a fresh process: an import cycle that in-process tests cannot see
(their modules are already imported) once kept it from starting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCOREBOX = Path(sys.executable).with_name("scorebox")


def _scorebox(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SCOREBOX_")},
        "SCOREBOX_DATA_DIR": str(tmp_path),
        "SCOREBOX_DATABASE_URL": f"sqlite:///{tmp_path / 'scorebox.db'}",
    }
    return subprocess.run(
        [str(SCOREBOX), *args], check=False, env=env, capture_output=True, text=True, timeout=120
    )


def test_scorebox_audit_starts_in_a_fresh_process(tmp_path: Path) -> None:
    shown = _scorebox(tmp_path, "audit", "--help")
    assert shown.returncode == 0, shown.stderr
    assert "Show the audit log" in shown.stdout


@pytest.mark.parametrize(
    "module", ["engine.api.routes.audit", "engine.cli.audit", "engine.http.deps"]
)
def test_every_audit_module_imports_first(module: str) -> None:
    """Each is the first module a process imports, so a cycle through it would show."""
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_scorebox_audit_lists_a_real_database(tmp_path: Path) -> None:
    made = _scorebox(tmp_path, "tenant", "create", "acme")
    assert made.returncode == 0, made.stderr
    listed = _scorebox(tmp_path, "audit")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[3] for line in lines] == ["tenant.created", "key.created"]
    assert all("via cli" in line for line in lines)
    as_json = _scorebox(tmp_path, "audit", "--json", "--action", "tenant.created")
    assert as_json.returncode == 0, as_json.stderr
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [r["action"] for r in records] == ["tenant.created"]
    assert records[0]["target"]
    wrong = _scorebox(tmp_path, "audit", "--action", "no.such")
    assert wrong.returncode != 0
    assert "is not one of" in wrong.stderr
