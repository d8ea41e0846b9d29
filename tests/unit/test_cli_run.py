"""``scorebox run`` as a CI runner: local judges, per-row output, gates,
parameterised built-ins, data files, ``--help`` speed. Built-ins only: no Docker."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from engine.cli import main
from tests.fake_llm import FakeLLM, Reply

ROWS: list[dict[str, object]] = [
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
    return tmp_path


def rows_file(tmp_path: Path, rows: list[dict[str, object]] = ROWS) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# --- local judges use the configured LLM endpoint, with a disk cache ------------------------------


def test_local_judges_reach_the_configured_endpoint_and_cache(
    env: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOREBOX_LLM_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("SCOREBOX_LLM_API_KEY", "test-key")
    fake_llm.responder = lambda body: Reply(text="Clear.\nSCORE: 4")
    data = rows_file(env)
    out = env / "r.jsonl"
    result = cli("run", "--local", "--check", "fluency", "--data", str(data), "-o", str(out))
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["status"] for r in records] == ["ok", "ok"]
    assert [r["score"] for r in records] == [4, 4]
    assert len(fake_llm.requests) == 2
    # the second run is served from the judge cache under the data dir
    assert cli("run", "--local", "--check", "fluency", "--data", str(data)).exit_code == 0
    assert len(fake_llm.requests) == 2
    assert list((env / "data" / "judge-cache").rglob("*.json"))
    # --no-cache asks again
    assert cli("run", "--no-cache", "--check", "fluency", "--data", str(data)).exit_code == 0
    assert len(fake_llm.requests) == 4


# --- per-row output, gates and exit codes ---------------------------------------------------------


def test_per_row_output_jsonl_csv_html(env: Path) -> None:
    data = rows_file(env)
    paths = [env / "r.jsonl", env / "r.csv", env / "report.html"]
    args = ["run", "--check", "is_json", "--data", str(data)]
    for p in paths:
        args += ["-o", str(p)]
    result = cli(*args)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in paths[0].read_text().splitlines()]
    assert [(r["row_id"], r["check"], r["score"]) for r in records] == [
        ("a", "is_json", False),
        ("b", "is_json", False),
    ]
    assert records[1]["explanation"].startswith("not JSON")
    assert records[1]["model_output"] == "not json"
    table = list(csv.DictReader(paths[1].open()))
    assert table[1]["score"] == "false" and table[1]["scenario_input"] == "Say something"
    page = paths[2].read_text()
    assert "<svg" in page and "is_json" in page and "not json" in page
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_every_row_erroring_fails_the_run_with_exit_3(env: Path) -> None:
    # judges without an endpoint: judge_error on every row (was exit 0)
    result = cli("run", "--check", "fluency", "--data", str(rows_file(env)))
    assert result.exit_code == 3, result.output
    assert "judge_error=2" in result.output
    off = cli("run", "--check", "fluency", "--data", str(rows_file(env)), "--fail-on", "none")
    assert off.exit_code == 0, off.output


def test_thresholds_and_max_failures(env: Path) -> None:
    data = rows_file(env)
    base = ["run", "--check", "regex_match", "--param", "regex_match.pattern=Paris"]
    assert cli(*base, "--data", str(data), "--threshold", "regex_match=0.5").exit_code == 0
    failed = cli(*base, "--data", str(data), "--threshold", "regex_match=0.8")
    assert failed.exit_code == 3
    assert "regex_match: 0.5 < threshold 0.8" in failed.output
    assert cli(*base, "--data", str(data), "--max-failures", "1").exit_code == 0
    assert cli(*base, "--data", str(data), "--max-failures", "0").exit_code == 3
    assert cli(*base, "--data", str(data), "--threshold", "nope").exit_code == 2
    missing = cli(*base, "--data", str(data), "--threshold", "other=0.1")
    assert missing.exit_code == 2 and "no check 'other'" in missing.output  # before scoring


# --- parameterised built-ins locally, builtin: prefix ---------------------------------------------


def test_parameterised_builtins_run_locally(env: Path) -> None:
    data = rows_file(env)
    out = env / "r.jsonl"
    spec = '{"name":"regex_match","params":{"pattern":"Par"}}'
    result = cli("run", "--local", "--check", spec, "--data", str(data), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert [json.loads(x)["score"] for x in out.read_text().splitlines()] == [True, False]
    result = cli(
        "run",
        "--check",
        "builtin:regex_match",
        "--param",
        "regex_match.pattern=x",
        "--data",
        str(data),
        "-o",
        str(out),
    )
    assert result.exit_code == 0, result.output
    missing = cli("run", "--check", "regex_match", "--data", str(data))
    assert missing.exit_code == 1
    assert "pattern" in missing.output and "Traceback" not in missing.output
    unknown = cli("run", "--check", "is_json", "--param", "nope.x=1", "--data", str(data))
    assert unknown.exit_code == 2 and "nope" in unknown.output


# --- data files -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("rows.json", '[{"model_output": "a"},', "rows.json:1:"),
        ("rows.csv", "answer,expected\nhi,there\n", "unknown column(s) answer, expected"),
        ("rows.csv", 'model_output,id\n"abc,1\nx,2\n', "rows.csv:"),
        ("rows.jsonl", '{"model_output": "a"}\n{"scenario_input": "b"}\n', "rows.jsonl:2:"),
        ("rows.txt", "x", "unknown data format"),
    ],
)
def test_bad_data_files_name_file_line_and_columns(
    env: Path, name: str, content: str, message: str
) -> None:
    path = env / name
    path.write_text(content)
    result = cli("run", "--check", "is_json", "--data", str(path))
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_tsv_and_column_mapping(env: Path) -> None:
    path = env / "rows.tsv"
    path.write_text('answer\tquestion\n{"a": 1}\tq1\nno\tq2\n')
    out = env / "r.jsonl"
    result = cli(
        "run",
        "--check",
        "is_json",
        "--data",
        str(path),
        "--map",
        "model_output=answer",
        "--map",
        "scenario_input=question",
        "-o",
        str(out),
    )
    assert result.exit_code == 0, result.output
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(r["score"], r["scenario_input"]) for r in records] == [(True, "q1"), (False, "q2")]
    unmapped = cli("run", "--check", "is_json", "--data", str(path))
    assert "expected columns: model_output (required)" in unmapped.output


def _interrupt(*_args: object, **_kwargs: object) -> None:
    raise KeyboardInterrupt


def test_ctrl_c_while_uploading_says_the_run_may_exist_and_exits_130(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.cli import remote

    monkeypatch.setattr(remote.Remote, "json", _interrupt)
    result = cli(
        "run",
        "--check",
        "contains_json",
        "--data",
        str(rows_file(env)),
        "--server",
        "http://x",
        "--api-key",
        "k",
    )
    assert result.exit_code == 130, result.output
    assert "interrupted while submitting the run" in result.stderr
    assert "scorebox run list" in result.stderr
    assert "Aborted!" not in result.output


def test_ctrl_c_in_any_command_is_interrupted_and_exit_130_not_aborted(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.modules["engine.cli.run"], "run_local", _interrupt)
    result = cli("run", "--check", "contains_json", "--data", str(rows_file(env)))
    assert result.exit_code == 130, result.output
    assert result.stderr.strip() == "interrupted"
    assert "Aborted!" not in result.output
