"""Entries named with their file, configurations on the command line, the stand-ins' surface
and the validator's word on imports past it, async entries (engine.contract.formats)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from engine.cli.check_config import apply_configs, read_config
from engine.contract import Policy, formats
from engine.names import split_entry
from engine.suites.file import threshold_key
from engine.validation import stand_ins, validate

ROOT = Path(__file__).resolve().parents[2]
STAND_INS = ROOT / "sandbox_images" / "python" / "stand-in-modules"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("graders.py:injection_blocked", ("graders.py", "injection_blocked")),
        ("file://graders.py:injection_blocked", ("graders.py", "injection_blocked")),
        ("file://graders.py", ("graders.py", None)),
        ("dir/graders.py", ("dir/graders.py", None)),
        ("regex_match", ("regex_match", None)),
        ("C:/x/graders.py", ("C:/x/graders.py", None)),
        ("graders.py:not-a-name", ("graders.py:not-a-name", None)),
    ],
)
def test_split_entry(name: str, expected: tuple[str, str | None]) -> None:
    assert split_entry(name) == expected


def test_threshold_key_keeps_the_entry() -> None:
    assert threshold_key("checks/graders.py:blocked") == "graders:blocked"
    assert threshold_key("checks/graders.py") == "graders"


def test_config_inline_from_a_file_and_merged(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"limit": 3}')
    assert read_config(f"@{path}") == {"limit": 3}
    refs = apply_configs(["a.py:f", "b.py"], ['a.py:f={"x": 1}'])
    assert refs == [{"name": "a.py:f", "config": {"x": 1}}, "b.py"]
    with pytest.raises(click.BadParameter, match=r"not in the run: c\.py"):
        apply_configs(["a.py"], ["c.py={}"])
    with pytest.raises(click.BadParameter, match="JSON object"):
        read_config("[1, 2]")


def _detect(source: str, entry: str | None = None) -> formats.Detected:
    return formats.detect(*formats.shapes_of(ast.parse(source)), entry=entry)


def test_async_entries_are_found_and_graders_refuse_them() -> None:
    detected = _detect("async def scorer(output, expected):\n    return 1\n")
    assert detected.format is formats.Format.BRAINTRUST and detected.shape is not None
    assert detected.shape.is_async
    with pytest.raises(formats.FormatError, match="plain `def`"):
        _detect("async def grade(sample, item):\n    return 1\n")


def test_phoenix_one_argument_needs_its_decorator_or_a_name() -> None:
    source = "def is_short(text):\n    return len(text) < 5\n"
    with pytest.raises(formats.FormatError):
        _detect(source)
    detected = _detect(source, entry="is_short")
    args, kwargs = formats.bind(detected.format, detected.shape, {"model_output": "[1, 2]"})  # type: ignore[arg-type]
    assert (args, kwargs) == ([], {"text": [1, 2]})


def test_structured_output_rule() -> None:
    assert formats.output_of({"model_output": "x", "output": {"a": 1}}) == {"a": 1}
    assert formats.output_of({"model_output": "3.5"}) == 3.5
    assert formats.output_of({"model_output": "[1]"}) == [1]
    assert formats.output_of({"model_output": "true"}) == "true"  # only objects, arrays, numbers
    assert formats.output_of({"model_output": '"quoted"'}) == '"quoted"'
    assert formats.output_of({"model_output": "NaN"}) == "NaN"


def test_the_stand_ins_hold_what_the_table_says() -> None:
    """Every name the table lists imports from the stand-in (a fresh interpreter, which
    sees the stand-ins and the standard library only)."""
    table = {module: sorted(names) for module, names in stand_ins.SURFACES.items()}
    script = (
        "import importlib, json, sys\n"
        f"sys.path.insert(0, {str(STAND_INS)!r})\n"
        "missing = []\n"
        "for module, names in json.loads(sys.argv[1]).items():\n"
        "    loaded = importlib.import_module(module)\n"
        "    for name in names:\n"
        "        try:\n"
        "            importlib.import_module(f'{module}.{name}')\n"
        "        except ImportError:\n"
        "            if not hasattr(loaded, name):\n"
        "                missing.append(f'{module}.{name}')\n"
        "print(json.dumps(missing))\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", script, json.dumps(table)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == []
    assert set(formats.STAND_IN_MODULES) == {m.split(".")[0] for m in stand_ins.DISTRIBUTIONS}
    assert stand_ins.distribution_of("phoenix.evals.llm") == "arize-phoenix-evals"
    assert stand_ins.distribution_of("phoenix.experiments") == "arize-phoenix"


def test_imports_past_a_stand_in_name_the_real_distribution() -> None:
    report = validate("from phoenix.evals import llm_classify\n", Policy.STANDARD)
    [issue] = [i for i in report.issues if i.code == "undeclared-import"]
    assert '"arize-phoenix-evals"' in issue.message and "phoenix.evals" in issue.message
    report = validate("from phoenix.otel import register\n", Policy.STANDARD)
    assert any('"arize-phoenix"' in i.message for i in report.errors)
    report = validate("from langsmith import Client\n", Policy.STANDARD)
    assert any("`langsmith.Client`" in i.message for i in report.errors)
    declared = (
        '# /// script\n# dependencies = ["arize-phoenix-evals"]\n# ///\n'
        "from phoenix.evals import llm_classify\n\ndef handler(output):\n    return 1.0\n"
    )
    assert not [i for i in validate(declared, Policy.STANDARD).issues if i.severity == "error"]
    unchanged = (
        "from langsmith import wrappers\nfrom reward_kit.models import StepOutput\n"
        "from eval_protocol.models import MetricResult\nfrom braintrust import Score\n"
        "from phoenix.experiments.evaluators import create_evaluator\n\n"
        "def handler(output):\n    return 1.0\n"
    )
    assert validate(unchanged, Policy.STANDARD).valid


def test_a_suite_names_entries_and_configurations(tmp_path: Path) -> None:
    from engine.cli.params import result_names
    from engine.suites.file import load_suite

    suite = tmp_path / "scorebox.yaml"
    suite.write_text(
        "version: 1\ndata: rows.jsonl\nchecks:\n"
        "  - checks/graders.py:blocked\n"
        "  - name: checks/graders.py:clean\n"
        "    config: {banned: [refund]}\n"
        "    threshold: 0.5\n"
    )
    plan = load_suite(suite)
    assert plan.checks == (
        f"{tmp_path}/checks/graders.py:blocked",
        {"name": f"{tmp_path}/checks/graders.py:clean", "config": {"banned": ["refund"]}},
    )
    assert plan.thresholds == {"graders:clean": 0.5}
    assert result_names(plan.checks) == ["graders:blocked", "graders:clean"]


def test_validate_takes_file_colon_function(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from engine.cli import main

    path = tmp_path / "graders.py"
    two = "def a(output, context):\n    return 1\n\n\ndef b(output, context):\n    return 1\n"
    path.write_text(two)
    several = CliRunner().invoke(main, ["check", "validate", str(path)])
    assert several.exit_code == 1 and "several functions" in several.output
    named = CliRunner().invoke(main, ["check", "validate", f"{path}:b", "--json"])
    assert named.exit_code == 0, named.output
    report = json.loads(named.output)
    assert (report["entry"], report["format"]) == ("b", "promptfoo")
    clash = CliRunner().invoke(main, ["check", "validate", f"{path}:b", "--entry", "a"])
    assert clash.exit_code == 2 and "give one" in clash.output
