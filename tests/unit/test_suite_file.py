"""Suite files (``scorebox.yaml``): the model, its messages, its published JSON
Schema, ``scorebox init``, and ``scorebox run`` picking a suite up with flags overriding
it. Built-ins only here (no Docker); tests/integration/test_suite_local.py runs the
example suite's .py check in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest
import yaml
from click.testing import CliRunner, Result

from engine.cli import main
from engine.cli.suite import EXAMPLE_SUITE
from engine.contract import Status
from engine.suites.data import ROW_FIELDS
from engine.suites.file import RowField, SuiteError, load_suite, parse_suite, schema_text

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "docs" / "scorebox.schema.json"

ROWS = [
    {"id": "a", "model_output": "Paris is the capital.", "scenario_input": "Capital of France?"},
    {"id": "b", "model_output": "not json", "scenario_input": "Say something"},
]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path / "data"))
    for name in ("SCOREBOX_SERVER", "SCOREBOX_LLM_BASE_URL", "SCOREBOX_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return tmp_path


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


SUITE = """\
data: rows.jsonl
checks:
  - name: regex_match
    params: {pattern: Paris}
    threshold: 0.5
  - builtin:is_json
output: [out/results.jsonl]
"""


# --- the model and its messages ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("checks: [is_json\n", ["suite.yaml:2:1: not valid YAML"]),
        ("", ["suite.yaml: the file is empty", "scorebox init"]),
        ("- is_json\n", ["expected a mapping of keys", "got a list"]),
        ("data: rows.jsonl\n", ["suite.yaml:1: checks: missing. Expected: The checks to run"]),
        (
            "checks:\n  - name: regex_match\n    thresold: 0.8\n",
            ["suite.yaml:3: checks[0].thresold: unknown key; did you mean 'threshold'?"],
        ),
        (
            "checks:\n  - is_json\n  - name: exact_match\n    threshold: high\n",
            [
                "suite.yaml:4: checks[1].threshold: Input should be a valid number",
                '(got "high")',
                "pass rate",
            ],
        ),
        ("checks: [3]\n", ["suite.yaml:1: checks[0]: a check is a name, or a mapping"]),
        ("checks: ['']\n", ["suite.yaml:1: checks[0]: String should have at least 1 character"]),
        (
            "checks: [is_json]\nfail_on: [error, bogus]\n",
            ["suite.yaml:2: fail_on[1]: Input should be", '(got "bogus")', "[] for neither"],
        ),
        (
            "checks: [is_json]\nmap:\n  answer: model_output\n",
            ["suite.yaml:3: map.answer: 'answer' is not a row field: use one of id, model_output"],
        ),
        (
            "checks: [is_json]\noutput: report.pdf\n",
            ["suite.yaml:2: output: Input should be a valid list"],
        ),
        (
            "checks: [is_json]\noutput: [report.pdf]\n",
            ["suite.yaml:2: output[0]: String should match pattern", ".jsonl, .csv, .tsv"],
        ),
        ("checks: [is_json]\nmax_failures: -1\n", ["suite.yaml:2: max_failures: Input should be"]),
        ("checks: [is_json]\ncolour: red\n", ["suite.yaml:2: colour: unknown key; known keys:"]),
        ("version: 2\nchecks: [is_json]\n", ["suite.yaml:1: version: Input should be 1"]),
    ],
)
def test_suite_errors_name_the_file_line_key_and_fix(text: str, expected: list[str]) -> None:
    with pytest.raises(SuiteError) as caught:
        parse_suite(text, "suite.yaml")
    for part in expected:
        assert part in str(caught.value)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(SuiteError) as caught:
        parse_suite("checks: [3]\nfail_on: [x]\nlabels: [a]\n", "s.yaml")
    message = str(caught.value)
    assert message.startswith("s.yaml: 3 problems:")
    assert all(f"s.yaml:{n}:" in message for n in (1, 2, 3))


def test_paths_resolve_against_the_suite_file_and_thresholds_take_result_names(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sub" / "scorebox.yaml"
    path.parent.mkdir()
    path.write_text(
        "data: d/rows.csv\n"
        "checks:\n"
        "  - c/brevity.py\n"
        "  - {name: c/short.py, threshold: 0.9}\n"
        "  - {name: builtin:regex_match, params: {pattern: x}, threshold: 0.5}\n"
        "  - {name: judge, version: 3}\n"
        "output: [r.html]\n"
    )
    plan = load_suite(path)
    base = path.parent
    assert plan.data == base / "d" / "rows.csv"
    assert plan.checks == (
        str(base / "c" / "brevity.py"),
        str(base / "c" / "short.py"),
        {"name": "builtin:regex_match", "params": {"pattern": "x"}},
        {"name": "judge", "version": 3},
    )
    assert plan.thresholds == {"short": 0.9, "regex_match": 0.5}
    assert plan.outputs == (base / "r.html",)


def test_row_fields_and_statuses_agree_with_the_cli() -> None:
    assert get_args(RowField) == ROW_FIELDS
    schema = json.loads(SCHEMA.read_text())
    assert schema["properties"]["map"]["propertyNames"]["enum"] == list(ROW_FIELDS)
    statuses = schema["$defs"]["Status"]["enum"]
    assert statuses == [s.value for s in Status]


# --- the published JSON Schema ------------------------------------------------------------------


def test_the_committed_schema_is_the_generated_one() -> None:
    assert SCHEMA.read_text() == schema_text(), (
        "docs/scorebox.schema.json is stale: "
        "python -m engine.suites.file > docs/scorebox.schema.json"
    )


def test_the_schema_accepts_the_init_example_and_rejects_what_the_model_rejects() -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    example = yaml.safe_load(EXAMPLE_SUITE)
    jsonschema.validate(example, schema)
    parse_suite(EXAMPLE_SUITE)
    bads: list[dict[str, Any]] = [
        {"checks": [{"name": "x", "thresold": 1}]},
        {"checks": []},
        {"checks": ["x"], "fail_on": ["bogus"]},
        {"checks": ["x"], "output": ["r.pdf"]},
        {"checks": ["x"], "map": {"answer": "x"}},
    ]
    for bad in bads:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
        with pytest.raises(SuiteError):
            parse_suite(yaml.safe_dump(bad))


# --- scorebox init --------------------------------------------------------------------------------


def test_init_writes_the_example_and_never_overwrites_without_force(env: Path) -> None:
    (env / "rows.jsonl").unlink()
    result = cli("init")
    assert result.exit_code == 0, result.output
    for name in ("scorebox.yaml", "rows.jsonl", "checks/mentions_expected.py"):
        assert f"wrote {name}" in result.output
    assert (env / "scorebox.yaml").read_text() == EXAMPLE_SUITE
    assert "# " in EXAMPLE_SUITE.splitlines()[0]  # commented
    plan = load_suite(env / "scorebox.yaml")
    assert plan.data == env / "rows.jsonl" and plan.data.is_file()
    assert (env / "checks" / "mentions_expected.py").is_file()

    (env / "scorebox.yaml").write_text("checks: [is_json]\n")
    (env / "rows.jsonl").write_text('{"model_output": "mine"}\n')
    again = cli("init")
    assert again.exit_code == 1
    assert "scorebox.yaml exists" in again.output and "--force" in again.output
    assert (env / "scorebox.yaml").read_text() == "checks: [is_json]\n"

    forced = cli("init", "--force")
    assert forced.exit_code == 0, forced.output
    assert (env / "scorebox.yaml").read_text() == EXAMPLE_SUITE
    assert "kept rows.jsonl" in forced.output
    assert (env / "rows.jsonl").read_text() == '{"model_output": "mine"}\n'


def test_init_into_a_new_directory(env: Path) -> None:
    result = cli("init", "evals")
    assert result.exit_code == 0, result.output
    assert (env / "evals" / "scorebox.yaml").is_file()
    assert "cd evals && scorebox run" in result.output


# --- scorebox run with a suite ------------------------------------------------------------


def test_run_picks_up_scorebox_yaml_from_the_current_directory(env: Path) -> None:
    (env / "out").mkdir()
    (env / "scorebox.yaml").write_text(SUITE)
    result = cli("run", "--no-progress")
    assert result.exit_code == 0, result.output
    records = [json.loads(x) for x in (env / "out" / "results.jsonl").read_text().splitlines()]
    assert [(r["check"], r["row_id"], r["score"]) for r in records] == [
        ("regex_match", "a", True),
        ("regex_match", "b", False),
        ("is_json", "a", False),
        ("is_json", "b", False),
    ]


def test_the_suite_threshold_gates_the_run_and_flags_override_it(env: Path) -> None:
    (env / "out").mkdir()
    (env / "scorebox.yaml").write_text(SUITE.replace("threshold: 0.5", "threshold: 0.8"))
    failed = cli("run", "--no-progress")
    assert failed.exit_code == 3, failed.output
    assert "regex_match: 0.5 < threshold 0.8" in failed.output
    assert cli("run", "--threshold", "regex_match=0.5").exit_code == 0
    # --max-failures from the flag: 3 false rows (regex b, is_json a and b)
    assert cli("run", "--max-failures", "2", "--threshold", "regex_match=0").exit_code == 3
    # --param overrides the suite's params: everything matches ".", so the threshold holds
    assert cli("run", "--param", "regex_match.pattern=.").exit_code == 0
    # --check replaces the suite's checks, and with them the suite's thresholds
    replaced = cli("run", "--check", "is_json", "--suite", "scorebox.yaml")
    assert replaced.exit_code == 0, replaced.output
    assert "regex_match" not in replaced.output


def test_suite_gates_fail_on_and_max_failures(env: Path) -> None:
    # fluency without an LLM endpoint: judge_error on every row
    (env / "scorebox.yaml").write_text("data: rows.jsonl\nchecks: [fluency]\n")
    assert cli("run").exit_code == 3
    (env / "scorebox.yaml").write_text("data: rows.jsonl\nchecks: [fluency]\nfail_on: []\n")
    assert cli("run").exit_code == 0
    assert cli("run", "--fail-on", "judge_error").exit_code == 3
    (env / "scorebox.yaml").write_text(
        "data: rows.jsonl\nchecks: [fluency]\nfail_on: [judge_error]\nmax_failures: 2\n"
    )
    # the failing rows are within max_failures, but a check with no ok row still fails
    allowed = cli("run")
    assert allowed.exit_code == 3
    assert "fluency: no row scored ok (judge_error=2)" in allowed.output
    assert cli("run", "--max-failures", "1").exit_code == 3
    assert cli("run", "--fail-on", "none").exit_code == 0


def test_suite_from_another_directory_with_data_map_and_output_overrides(env: Path) -> None:
    suite_dir = env / "evals"
    suite_dir.mkdir()
    (suite_dir / "answers.tsv").write_text('answer\tquestion\n{"a": 1}\tq1\nno\tq2\n')
    (suite_dir / "scorebox.yaml").write_text(
        "data: answers.tsv\n"
        "map: {model_output: answer, scenario_input: question}\n"
        "checks: [is_json]\n"
        "output: [suite-results.jsonl]\n"
    )
    result = cli("run", "--suite", "evals/scorebox.yaml", "--no-progress")
    assert result.exit_code == 0, result.output
    records = [json.loads(x) for x in (suite_dir / "suite-results.jsonl").read_text().splitlines()]
    assert [(r["score"], r["scenario_input"]) for r in records] == [(True, "q1"), (False, "q2")]
    # -o replaces the suite's outputs (relative to the working directory, as flags are)
    assert cli("run", "--suite", "evals/scorebox.yaml", "-o", "mine.csv").exit_code == 0
    assert (env / "mine.csv").is_file()
    # --data overrides the suite's data; the suite's map still applies, --map wins per field
    (env / "other.tsv").write_text("text\tquestion\n[1]\tq9\n")
    out = env / "other.jsonl"
    result = cli(
        "run", "--suite", "evals/scorebox.yaml", "--data", "other.tsv",
        "--map", "model_output=text", "-o", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [json.loads(x)["scenario_input"] for x in out.read_text().splitlines()] == ["q9"]


def test_a_bad_suite_is_a_usage_error_without_a_traceback(env: Path) -> None:
    (env / "scorebox.yaml").write_text("data: rows.jsonl\nchecks:\n  - name: is_json\n    x: 1\n")
    result = cli("run")
    assert result.exit_code == 2
    assert "scorebox.yaml:4: checks[0].x: unknown key" in result.output
    assert "Traceback" not in result.output
    (env / "scorebox.yaml").write_text("data: missing.jsonl\nchecks: [is_json]\n")
    missing = cli("run")
    assert missing.exit_code == 2
    assert "data: missing.jsonl does not exist" in missing.output
    (env / "scorebox.yaml").write_text("checks: [is_json]\n")
    assert "set `data:` in the suite or pass --data" in cli("run").output
    assert cli("run", "--data", "rows.jsonl").exit_code == 0


def test_no_check_and_no_suite_says_how_to_start(env: Path) -> None:
    result = cli("run")
    assert result.exit_code == 2
    assert "no scorebox.yaml" in result.output and "scorebox init" in result.output
    # with --check, a scorebox.yaml in the directory is not read
    (env / "scorebox.yaml").write_text("not: [valid\n")
    assert cli("run", "--check", "is_json", "--data", "rows.jsonl").exit_code == 0
