"""The same scorer file, run by the real package on the host and by scorebox: equal scores.

LangSmith (``langsmith`` on PyPI, small and importable) is installed into a throwaway
virtualenv under the test's tmp dir; its own ``run_evaluator`` runs the evaluator on
LangSmith ``Run``/``Example`` objects holding the rows. reward-kit cannot be tested this
way yet (``pip install reward-kit`` fails to import without ``mcp<2``), promptfoo is an
npm package, and braintrust / arize-phoenix pull large dependency trees.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.contract import Status
from engine.sandbox.runner import CodeCheck, SandboxRunner
from tests.integration.conftest import FAST

pytestmark = pytest.mark.docker

LANGSMITH = "langsmith==0.14.17"

EVALUATOR = textwrap.dedent(
    """
    def correct(inputs: dict, outputs: dict, reference_outputs: dict) -> dict:
        ok = outputs["output"].strip().lower() == reference_outputs["output"].strip().lower()
        return {"key": "correct", "score": ok, "comment": f"{inputs['input']}: {ok}"}
    """
)

ROWS = [
    {"model_output": "Paris", "scenario_input": "France?", "scenario_result": "paris"},
    {"model_output": "Lyon", "scenario_input": "France?", "scenario_result": "Paris"},
    {"model_output": " Rome ", "scenario_input": "Italy?", "scenario_result": "Rome"},
]

HOST = """
import datetime, json, sys, uuid
from langsmith.evaluation import run_evaluator
from langsmith.schemas import Example, Run

namespace = {}
exec(open(sys.argv[1]).read(), namespace)
evaluator = run_evaluator(namespace["correct"])
now = datetime.datetime.now(datetime.timezone.utc)
out = []
for row in json.load(open(sys.argv[2])):
    inputs = {"input": row["scenario_input"]}
    run = Run(id=uuid.uuid4(), name="app", start_time=now, run_type="chain", inputs=inputs,
              outputs={"output": row["model_output"]}, trace_id=uuid.uuid4())
    example = Example(id=uuid.uuid4(), dataset_id=uuid.uuid4(), inputs=inputs,
                      outputs={"output": row["scenario_result"]}, created_at=now)
    result = evaluator.evaluate_run(run, example)
    out.append([result.score, result.comment])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def langsmith_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("langsmith-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", LANGSMITH], check=True, timeout=600)
    return python


def test_langsmith_evaluator_scores_equal(
    runner: SandboxRunner, langsmith_python: Path, tmp_path: Path
) -> None:
    check, rows, host = tmp_path / "correct.py", tmp_path / "rows.json", tmp_path / "host.py"
    check.write_text(EVALUATOR)
    rows.write_text(json.dumps(ROWS))
    host.write_text(HOST)
    done = subprocess.run(
        [str(langsmith_python), str(host), str(check), str(rows)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={"LANGSMITH_TRACING": "false", "PATH": "/usr/bin:/bin"},
    )
    expected = json.loads(done.stdout)
    results = runner.run_check(CodeCheck(source=EVALUATOR), ROWS, FAST)
    assert all(r.status is Status.OK for r in results), [r.error for r in results]
    assert [[r.score, r.explanation] for r in results] == expected
    assert expected == [[True, "France?: True"], [False, "France?: False"], [True, "Italy?: True"]]
