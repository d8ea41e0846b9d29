"""The corpus: scorer files written the way each tool's users publish them, scored by their
own tool on the host and by scorebox in the sandbox, with the same scores.

``tests/corpus/formats/<tool>/*.py`` are the files; ``cases.json`` holds each one's rows,
configuration and named entry (``file.py:function``, promptfoo's spelling). The tools run
from test-only installs (``scripts/formats_venvs.sh``: LangSmith, Braintrust and Phoenix's
client in one virtualenv, reward-kit and eval-protocol in theirs, promptfoo from npm);
``tests/corpus/formats/host.py`` drives the Python ones, promptfoo runs its own ``eval``.
A case with ``"compare": false`` cannot be run by its tool's SDK (``why`` says so): scorebox
is held to the values the tool's docs state instead.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.contract import Status, formats
from engine.models import RowResult
from engine.names import split_entry
from engine.sandbox.runner import CodeCheck, SandboxRunner
from tests.integration.conftest import FAST

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus" / "formats"
CASES: dict[str, dict[str, Any]] = json.loads((CORPUS / "cases.json").read_text())
#: Which install runs each folder's files.
RUNNER = {
    "braintrust": "tools",
    "phoenix": "tools",
    "langsmith": "tools",
    "reward_kit": "reward_kit",
    "eval_protocol": "eval_protocol",
    "promptfoo": "promptfoo",
}
QUIET = {
    "LANGSMITH_TRACING": "false",
    "BRAINTRUST_API_KEY": "",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
}


PROMPTFOO_FLAGS = ("--no-cache", "--no-write", "--no-progress-bar")


@pytest.fixture(scope="module")
def tools() -> dict[str, str]:
    if shutil.which("npm") is None:
        pytest.fail("the corpus test needs npm (promptfoo is an npm package)", pytrace=False)
    done = subprocess.run(
        [str(ROOT / "scripts" / "formats_venvs.sh")],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return dict(line.split("=", 1) for line in done.stdout.split())


def _entry(case: str) -> tuple[Path, str | None, str]:
    """The case's file, its entry as named (or None), and its entry as found."""
    file, named = split_entry(case)
    path = CORPUS / file
    source = path.read_text(encoding="utf-8")
    found = formats.detect(*formats.shapes_of(ast.parse(source)), entry=named).entry
    return path, named, found


def _promptfoo(
    binary: str, path: Path, entry: str, case: dict[str, Any], tmp: Path
) -> list[dict[str, Any]]:
    """promptfoo's own eval: a python provider returns each row's output, the file asserts."""
    (tmp / "provider.py").write_text(
        "def call_api(prompt, options, context):\n"
        "    return {'output': context['vars']['__output']}\n"
    )
    tests = []
    for row in case["rows"]:
        output = row["output"] if row.get("output") is not None else row["model_output"]
        assertion: dict[str, Any] = {"type": "python", "value": f"file://{path}:{entry}"}
        if case.get("config"):
            assertion["config"] = case["config"]
        tests.append({"vars": {**row.get("vars", {}), "__output": output}, "assert": [assertion]})
    config = {"prompts": ["{{__output}}"], "providers": ["file://provider.py"], "tests": tests}
    (tmp / "promptfooconfig.json").write_text(json.dumps(config))
    subprocess.run(
        [binary, "eval", "-c", "promptfooconfig.json", "-o", "out.json", *PROMPTFOO_FLAGS],
        cwd=tmp,
        env={**QUIET, "HOME": str(tmp)},
        capture_output=True,
        timeout=300,
        check=False,  # exit 100: some assertion failed, which is what the corpus has
    )
    results = json.loads((tmp / "out.json").read_text())["results"]["results"]
    out = []
    for result in sorted(results, key=lambda r: r["testIdx"]):
        [component] = result["gradingResult"]["componentResults"]
        out.append(
            {
                "score": component["score"],
                "passed": component["pass"],
                "explanation": component.get("reason"),
                "sub_scores": result.get("namedScores") or None,
            }
        )
    return out


def _arguments(case: dict[str, Any]) -> list[str]:
    return [json.dumps(case.get("config") or {}), json.dumps(case["rows"])]


def _host(python: str, tool: str, path: Path, entry: str, case: dict[str, Any]) -> Any:
    done = subprocess.run(
        [python, str(CORPUS / "host.py"), tool, str(path), entry, *_arguments(case)],
        check=False,
        cwd=CORPUS,
        env=QUIET,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _as_compared(result: RowResult) -> dict[str, Any]:
    """scorebox's result in the host runner's terms."""
    if result.status is Status.SKIPPED:
        return {"skipped": True}
    assert result.status is Status.OK, result.error
    metadata = result.metadata or {}
    subs = metadata.get("sub_scores") or {}
    return {
        "score": float(result.score),  # type: ignore[arg-type]
        "passed": result.passed,
        "explanation": result.explanation,
        "label": metadata.get("label"),
        "sub_scores": {k: float(v["score"]) for k, v in subs.items()} or None,
    }


def _same(tool: str, ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    if theirs.get("skipped"):
        assert ours == {"skipped": True}
        return
    assert ours["score"] == pytest.approx(float(theirs["score"]))
    if tool == "promptfoo":
        assert ours["passed"] is theirs["passed"]
        if ours["explanation"] is not None:  # a GradingResult's own reason
            assert ours["explanation"] == theirs["explanation"]
        if theirs["sub_scores"]:
            assert ours["sub_scores"] == theirs["sub_scores"]
        return
    if theirs.get("sub_scores"):
        assert ours["sub_scores"] == theirs["sub_scores"]
    if theirs.get("metrics"):
        assert ours["sub_scores"] == theirs["metrics"]
    if theirs.get("explanation") is not None:
        assert ours["explanation"] == theirs["explanation"]
    if tool == "phoenix" and ours["label"] is not None:
        assert ours["label"] == theirs["label"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_corpus_file_scores_as_its_own_tool_scores_it(
    case: str, runner: SandboxRunner, tools: dict[str, str], tmp_path: Path
) -> None:
    spec = CASES[case]
    tool = case.split("/", 1)[0]
    path, named, entry = _entry(case)
    check = CodeCheck(
        source=path.read_text(encoding="utf-8"), entry=named, config=spec.get("config")
    )
    ours = [_as_compared(r) for r in runner.run_check(check, spec["rows"], FAST)]
    if spec.get("compare") is False:
        assert spec["why"]
        for mine, stated in zip(ours, spec["expected"], strict=True):
            _same(tool, mine, stated)
        return
    if tool == "promptfoo":
        theirs = _promptfoo(tools["promptfoo"], path, entry, spec, tmp_path)
    else:
        theirs = _host(tools[RUNNER[tool]], tool, path, entry, spec)
    assert len(theirs) == len(ours)
    for mine, their in zip(ours, theirs, strict=True):
        _same(tool, mine, their)


# -- the image's stand-ins against the real packages ----------------------------------------

STAND_INS = ROOT / "sandbox_images" / "python" / "stand-in-modules"
#: (install, the real object, the stand-in's) — Phoenix's experiments evaluators are read
#: from phoenix.client (arize-phoenix, which holds phoenix.experiments, is a server install).
SURFACES = [
    ("reward_kit", f"reward_kit.models:{name}", f"reward_kit.models:{name}")
    for name in ("EvaluateResult", "MetricResult", "StepOutput", "Message")
] + [
    ("reward_kit", "reward_kit.typed_interface:reward_function", None),
    ("reward_kit", "reward_kit.reward_function:RewardFunction", None),
    *(
        ("eval_protocol", f"eval_protocol.models:{name}", None)
        for name in ("EvaluateResult", "MetricResult", "StepOutput", "Message")
    ),
    ("eval_protocol", "eval_protocol.typed_interface:reward_function", None),
    ("tools", "langsmith.wrappers:wrap_openai", None),
    ("tools", "langsmith.evaluation:EvaluationResult", None),
    ("tools", "braintrust:Score", None),
    ("tools", "braintrust:wrap_openai", None),
    ("tools", "braintrust:traced", None),
    (
        "tools",
        "phoenix.client.resources.experiments.evaluators:create_evaluator",
        "phoenix.experiments.evaluators:create_evaluator",
    ),
]


def _surface(python: str, specs: list[str], path: Path | None = None) -> dict[str, Any]:
    extra = ["--path", str(path)] if path is not None else []
    done = subprocess.run(
        [python, "-I", str(CORPUS / "surface.py"), *extra, *specs],
        env=QUIET,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_stand_ins_have_the_real_packages_fields_and_parameters(tools: dict[str, str]) -> None:
    """Each stand-in class has exactly the real one's fields; each function takes every
    parameter the real one names (by name, or through ``**options``)."""
    for install in ("reward_kit", "eval_protocol", "tools"):
        rows = [(real, mine or real) for where, real, mine in SURFACES if where == install]
        real = _surface(tools[install], [r for r, _ in rows])
        ours = _surface(sys.executable, [m for _, m in rows], STAND_INS)
        for real_name, our_name in rows:
            theirs, mine = real[real_name], ours[our_name]
            if "fields" in theirs:
                assert mine == theirs, our_name
            else:
                missing = set(theirs["parameters"]) - set(mine["parameters"])
                assert not missing or mine["var_keyword"], (our_name, missing)
