"""Okareo's shapes ↔ scorebox's, field for field. Pure: no I/O, no state.

Rows: ``model_output ← actual``, ``scenario_input ← input``, ``scenario_result
← result``, ``model_input ← model_input`` and ``metadata ← model_response``; a
``model_input`` that is a chat list (``[{"role", "content"}, ...]``) is also the
row's ``messages`` (what reward-kit functions read).
A data point whose model raised on the client (``error_message``) is not
scored; its test data point says why. Results come back as Okareo's
``model_metrics`` (``mean_scores``, ``scores_by_row``) and full data points
(``checks``, ``check_values``, ``checks_metadata``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.catalog.spec import NAME_PATTERN, CheckSpec
from engine.errors import InvalidRequestError
from engine.models import Row
from engine.okareo.store import ScenarioPoint, TestPoint, new_uuid
from engine.storage import RunStatus, StoredResult, moments
from engine.validation.rules import ModelCheckType

NAME_HELP = (
    "use 1 to 100 letters, digits, spaces, '_', '.' or '-', starting with a letter or digit "
    "and not ending with a space"
)

#: scorebox run status → Okareo test run status (the SDK waits for FINISHED or FAILED).
STATUS = {
    RunStatus.QUEUED: "RUNNING",
    RunStatus.RUNNING: "RUNNING",
    RunStatus.SUCCEEDED: "FINISHED",
    RunStatus.FAILED: "FAILED",
    RunStatus.CANCELLED: "FAILED",
}


def check_name(name: str | None) -> str:
    """A check name scorebox accepts, or :class:`InvalidRequestError` saying what to use."""
    if not name:
        raise InvalidRequestError("a check needs a `name`")
    if not re.fullmatch(NAME_PATTERN, name):
        raise InvalidRequestError(f"check name {name!r} is not accepted: {NAME_HELP}")
    return name


def check_spec(
    name: str | None,
    description: str | None,
    tags: Sequence[str] | None,
    config: Mapping[str, Any] | None,
) -> CheckSpec:
    """The scorebox check an Okareo ``check_create_or_update`` body describes."""
    name = check_name(name)
    config = dict(config or {})
    common: dict[str, Any] = {
        "name": name,
        "description": description,
        "tags": list(tags or []),
    }
    if config.get("code_contents"):
        return CheckSpec(kind="code", source=str(config["code_contents"]), **common)
    if config.get("prompt_template"):
        if config.get("audio"):
            raise InvalidRequestError(
                "audio checks are not supported by scorebox: set is_audio=False"
            )
        kind = str(config.get("type") or ModelCheckType.SCORE.value)
        if kind not in {t.value for t in ModelCheckType}:
            raise InvalidRequestError(
                f"model check type {kind!r} is not supported: use CheckOutputType.SCORE "
                "or CheckOutputType.PASS_FAIL"
            )
        return CheckSpec(
            kind="model",
            prompt_template=str(config["prompt_template"]),
            check_type=ModelCheckType(kind),
            **common,
        )
    raise InvalidRequestError(
        "check_config needs `code_contents` (a CodeBasedCheck file) or `prompt_template` "
        "(a ModelBasedCheck)"
    )


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return {"model_response": value}


def _error_message(entry: Mapping[str, Any]) -> str | None:
    error = entry.get("error_message")
    if error is None or error == "":
        return None
    if isinstance(error, Mapping):
        return str(error.get("message") or json.dumps(dict(error)))
    return str(error)


def test_points(
    points: Sequence[ScenarioPoint], model_data: Mapping[str, Any]
) -> tuple[list[TestPoint], list[Row]]:
    """A test run's data points (one per scenario point, in order) and the rows to score.

    ``model_data`` maps scenario data point ids to ``{actual, model_response,
    model_input, error_message}``, as ``run_test`` sends it for a CustomModel.
    """
    known = {p.id for p in points}
    unknown = [k for k in model_data if k not in known]
    if unknown:
        raise InvalidRequestError(
            f"model_results name {len(unknown)} data point(s) that are not in the scenario set "
            f"(first: {unknown[0]!r}): run the test on the scenario set the outputs came from"
        )
    out: list[TestPoint] = []
    rows: list[Row] = []
    for point in points:
        entry = model_data.get(point.id)
        if not isinstance(entry, Mapping):
            error: str | None = "the model returned no output for this data point"
            entry = {}
        else:
            error = _error_message(entry)
        row_index = None
        if error is None:
            row_index = len(rows)
            rows.append(
                Row(
                    id=point.id,
                    model_output=_text(entry.get("actual")),
                    scenario_input=point.input,
                    scenario_result=point.result,
                    model_input=(
                        None if entry.get("model_input") is None else _text(entry["model_input"])
                    ),
                    metadata=_metadata(entry.get("model_response")),
                    messages=_chat(entry.get("model_input")),
                )
            )
        out.append(
            TestPoint(
                id=new_uuid(),
                position=point.position,
                scenario_point_id=point.id,
                row_index=row_index,
                scenario_input=point.input,
                scenario_result=point.result,
                model_input=entry.get("model_input"),
                model_result=entry.get("actual"),
                model_metadata=entry.get("model_response"),
                error_message=error,
            )
        )
    return out, rows


def _chat(value: Any) -> list[dict[str, Any]] | None:
    """``value`` when it is an OpenAI chat list, else None."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in value)
    ):
        return [dict(m) for m in value]
    return None


@dataclass(frozen=True)
class Cell:
    """One check's outcome on one data point, as Okareo reports it."""

    value: bool | int | float | None
    explanation: str | None
    status: str
    error: str | None


def cell(result: StoredResult | None) -> Cell:
    if result is None:
        return Cell(None, "not scored yet", "pending", None)
    if result.status == "ok":
        return Cell(result.score, result.explanation, "ok", None)
    why = f"{result.status}: {result.error}" if result.error else result.status
    return Cell(None, why, result.status, result.error)


Results = Mapping[tuple[int, int], StoredResult]


def _cells(
    checks: Sequence[Mapping[str, Any]], point: TestPoint, results: Results
) -> list[tuple[Mapping[str, Any], Cell]]:
    if point.row_index is None:
        return []
    return [(c, cell(results.get((ci, point.row_index)))) for ci, c in enumerate(checks)]


def model_metrics(
    checks: Sequence[Mapping[str, Any]], points: Sequence[TestPoint], results: Results
) -> dict[str, Any]:
    """``{mean_scores: {check: mean}, scores_by_row: [{scenario_index, test_id, check: value}]}``.

    ``scenario_index`` is the data point's 1-based position in the scenario set.
    A check that did not score a row has value None and says why in
    ``<check>__explanation``; a row the model failed on has ``error_message``.
    """
    by_row: list[dict[str, Any]] = []
    scores: dict[str, list[float]] = {str(c["name"]): [] for c in checks}
    for point in points:
        entry: dict[str, Any] = {"scenario_index": point.position + 1, "test_id": point.id}
        if point.error_message is not None:
            entry["error_message"] = point.error_message
        for check, outcome in _cells(checks, point, results):
            name = str(check["name"])
            entry[name] = outcome.value
            if outcome.explanation:
                entry[f"{name}__explanation"] = outcome.explanation
            if outcome.value is not None:
                scores[name].append(float(outcome.value))
        by_row.append(entry)
    means = {name: moments.mean(v) for name, v in scores.items()}  # never overflows
    return {"mean_scores": means, "scores_by_row": by_row}


def _value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    return "int" if isinstance(value, int) else "float"


def full_data_point(
    test_run_id: str,
    run_type: str | None,
    checks: Sequence[Mapping[str, Any]],
    point: TestPoint,
    results: Results,
    time_created: str,
) -> dict[str, Any]:
    """One Okareo ``FullDataPointItem``: the row, its checks' values and their statuses."""
    values: dict[str, Any] = {}
    check_values: list[dict[str, Any]] = []
    meta: dict[str, Any] = {}
    for check, outcome in _cells(checks, point, results):
        name = str(check["name"])
        values[name] = outcome.value
        if outcome.explanation:
            values[f"{name}__explanation"] = outcome.explanation
        meta[name] = {
            "status": outcome.status,
            "error": outcome.error,
            "version": check.get("version"),
            "check_id": check.get("id"),
        }
        if outcome.value is not None:
            check_values.append(
                {
                    "name": name,
                    "value": outcome.value,
                    "value_type": _value_type(outcome.value),
                    "check_id": check.get("id"),
                    "explanation": outcome.explanation,
                }
            )
    return {
        "id": point.id,
        "test_run_id": test_run_id,
        "metric_type": run_type or "NL_GENERATION",
        "metric_value": {"actual": point.model_result, "expected": point.scenario_result},
        "tags": [],
        "scenario_data_point_id": point.scenario_point_id,
        "model_input": point.model_input,
        "model_result": point.model_result,
        "scenario_input": point.scenario_input,
        "scenario_result": point.scenario_result,
        "model_metadata": point.model_metadata,
        "time_created": time_created,
        "checks": values or None,
        "checks_metadata": meta or None,
        "error_message": point.error_message,
        "check_values": check_values,
    }
