"""Score one corpus file with its own tool, on the host, in that tool's virtualenv.

    python host.py TOOL FILE ENTRY CONFIG_JSON ROWS_JSON

prints one JSON result per row: ``{"score", "skipped", "explanation", "label",
"sub_scores"}``. Each tool gets the row the way its runner would: Braintrust through
``Eval(..., no_send_logs=True)``, Phoenix through ``phoenix.client``'s evaluators,
LangSmith through ``run_evaluator`` on ``Run``/``Example``, reward-kit by calling the
decorated function as its server does. Standard library and the tool only: this file
runs in the tool's virtualenv, not scorebox's.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import inspect
import json
import sys
import types
import uuid
from typing import Any


def structured(row: dict[str, Any]) -> Any:
    """The task's output: the row's ``output``, else model_output when it is a JSON object,
    array or number (a task that returned structured data), else the text."""
    if row.get("output") is not None:
        return row["output"]
    text = row["model_output"]
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict | list) or (
        isinstance(value, int | float) and not isinstance(value, bool)
    ):
        return value
    return text


def expected_of(row: dict[str, Any]) -> Any:
    value = row.get("scenario_result")
    return row.get("ground_truth") if value is None else value


def load(path: str, entry: str) -> Any:
    namespace: dict[str, Any] = {"__name__": "corpus_check"}
    with open(path, encoding="utf-8") as handle:
        exec(compile(handle.read(), path, "exec", dont_inherit=True), namespace)
    return namespace[entry]


def summary(scores: dict[str, Any]) -> dict[str, Any]:
    """Several named scores: their mean, each kept; one: itself; all None: skipped."""
    live = {k: v for k, v in scores.items() if v is not None}
    if not live:
        return {"skipped": True}
    if len(scores) == 1:
        return {"score": next(iter(live.values()))}
    mean = sum(float(v) for v in live.values()) / len(live)
    return {"score": mean, "sub_scores": {k: float(v) for k, v in live.items()}}


def _returning(value: Any) -> Any:
    def task(input: Any) -> Any:
        return value

    return task


def braintrust(path: str, entry: str, config: dict[str, Any], rows: list[Any]) -> list[Any]:
    from braintrust import Eval

    scorer = load(path, entry)
    if config:  # a scorer's configured keyword parameters (Braintrust's `parameters`)
        bound = functools.partial(scorer, **config)
        bound.__name__ = scorer.__name__  # type: ignore[attr-defined]
        scorer = bound
    out = []
    for row in rows:
        output = structured(row)
        case = {
            "input": row.get("scenario_input"),
            "expected": expected_of(row),
            "metadata": row.get("metadata") or {},
        }
        result = Eval(
            "corpus",
            data=[case],
            task=_returning(output),
            scores=[scorer],
            no_send_logs=True,
        )
        [one] = result.results
        if one.error is not None:
            raise RuntimeError(one.error)
        out.append(summary(dict(one.scores)))
    return out


def _phoenix_shims() -> Any:
    """Phoenix's ``phoenix.experiments`` names, served by ``phoenix.client`` (the same
    binding design; arize-phoenix itself is a server-sized install)."""
    from phoenix.client.resources.experiments import evaluators

    package = types.ModuleType("phoenix.experiments")
    module = types.ModuleType("phoenix.experiments.evaluators")
    module.create_evaluator = evaluators.create_evaluator  # type: ignore[attr-defined]
    package.evaluators = module  # type: ignore[attr-defined]
    sys.modules["phoenix.experiments"] = package
    sys.modules["phoenix.experiments.evaluators"] = module
    return evaluators


def phoenix(path: str, entry: str, config: dict[str, Any], rows: list[Any]) -> list[Any]:
    evaluators = _phoenix_shims()
    found = load(path, entry)
    if not hasattr(found, "evaluate"):
        found = evaluators.create_evaluator(kind="CODE", name=entry)(found)
    out = []
    for row in rows:
        expected = expected_of(row)
        kwargs = {
            "output": structured(row),
            "expected": expected,
            "reference": expected,
            "input": row.get("scenario_input"),
            "metadata": row.get("metadata") or {},
        }
        if inspect.iscoroutinefunction(getattr(found, "async_evaluate", None)):
            result = asyncio.run(found.async_evaluate(**kwargs))
        else:
            result = found.evaluate(**kwargs)
        if isinstance(result, list):
            [result] = result
        out.append(
            {
                "score": result.get("score"),
                "label": result.get("label"),
                "explanation": result.get("explanation"),
            }
        )
    return out


def _as_dict(value: Any, key: str) -> dict[str, Any]:
    return value if isinstance(value, dict) else {key: value}


def langsmith(path: str, entry: str, config: dict[str, Any], rows: list[Any]) -> list[Any]:
    from langsmith.evaluation import run_evaluator
    from langsmith.schemas import Example, Run

    evaluator = run_evaluator(load(path, entry))
    now = datetime.datetime.now(datetime.UTC)
    out = []
    for row in rows:
        inputs = _as_dict(row.get("scenario_input"), "input")
        run = Run(
            id=uuid.uuid4(),
            name="app",
            start_time=now,
            run_type="chain",
            inputs=inputs,
            outputs=_as_dict(structured(row), "output"),
            trace_id=uuid.uuid4(),
        )
        example = Example(
            id=uuid.uuid4(),
            dataset_id=uuid.uuid4(),
            inputs=inputs,
            outputs=_as_dict(expected_of(row), "output"),
            metadata=row.get("metadata") or {},
            created_at=now,
        )
        if evaluator.is_async:
            result = asyncio.run(evaluator.aevaluate_run(run, example))
        else:
            result = evaluator.evaluate_run(run, example)
        if isinstance(result, dict) and "results" in result:
            scores = {r.key: r.score for r in result["results"]}
            out.append(summary(scores))
            continue
        out.append({"score": result.score, "explanation": result.comment})
    return out


def _messages(row: dict[str, Any]) -> list[dict[str, Any]]:
    if row.get("messages") is not None:
        return list(row["messages"])
    built = []
    if row.get("scenario_input") is not None:
        built.append({"role": "user", "content": row["scenario_input"]})
    built.append({"role": "assistant", "content": row["model_output"]})
    return built


def reward_kit(path: str, entry: str, config: dict[str, Any], rows: list[Any]) -> list[Any]:
    function = load(path, entry)
    out = []
    for row in rows:
        result = function(messages=_messages(row), ground_truth=expected_of(row), **config)
        if inspect.iscoroutine(result):  # eval-protocol's async reward functions
            result = asyncio.run(result)
        metrics = {name: metric.score for name, metric in (result.metrics or {}).items()}
        out.append({"score": result.score, "explanation": result.reason, "metrics": metrics})
    return out


TOOLS = {
    "braintrust": braintrust,
    "phoenix": phoenix,
    "langsmith": langsmith,
    "reward_kit": reward_kit,
    "eval_protocol": reward_kit,
}


def main(argv: list[str]) -> None:
    tool, path, entry, config, rows = argv[1:6]
    results = TOOLS[tool](path, entry, json.loads(config), json.loads(rows))
    print(json.dumps(results, default=repr))


if __name__ == "__main__":
    main(sys.argv)
