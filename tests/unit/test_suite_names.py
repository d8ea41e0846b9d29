"""The names suites, the CLI and the exports share are defined once (engine.suites.names)."""

from __future__ import annotations

import subprocess
import sys

from engine import catalog
from engine.contract import Status
from engine.runs import export
from engine.suites import file, names, pytest_plugin, testing


def test_every_user_reads_the_one_definition() -> None:
    assert file.SUITE_FILE is names.SUITE_FILE
    assert pytest_plugin.SUITE_FILE is names.SUITE_FILE
    assert file.BUILTIN_PREFIX is names.BUILTIN_PREFIX
    assert catalog.BUILTIN_PREFIX is names.BUILTIN_PREFIX
    assert export.DEFAULT_FAIL_ON is names.DEFAULT_FAIL_ON
    assert testing.DEFAULT_FAIL_ON is names.DEFAULT_FAIL_ON


def test_default_fail_on_is_statuses_and_a_suite_defaults_to_them() -> None:
    assert {Status(s) for s in names.DEFAULT_FAIL_ON} == {
        Status.ERROR,
        Status.JUDGE_ERROR,
        Status.SANDBOX_ERROR,
    }
    suite = file.parse_suite("data: rows.jsonl\nchecks: [is_json]\n")
    assert suite.fail_on == [Status(s) for s in names.DEFAULT_FAIL_ON]
    assert all(isinstance(s, Status) for s in suite.fail_on)


def test_the_names_load_without_pydantic() -> None:
    code = "import sys, engine.suites.names; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
