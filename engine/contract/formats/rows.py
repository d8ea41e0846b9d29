"""What a row holds, as other tools' entries receive it: the task's output, the chat
messages, the row's fields, records with attribute access. Carried into the sandbox image
(stdlib only).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def parsed_json(text: Any, *, containers_only: bool = True) -> Any:
    """``text`` parsed as JSON, or None when it is not JSON (an object or array)."""
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    if containers_only and not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def _structured(text: Any) -> Any:
    """``text`` parsed when it is a JSON object, array or number; else None."""
    parsed = parsed_json(text, containers_only=False)
    if isinstance(parsed, dict | list) or (
        isinstance(parsed, int | float) and not isinstance(parsed, bool)
    ):
        if isinstance(parsed, float) and not math.isfinite(parsed):
            return None  # json.loads reads NaN and Infinity, which no tool returns as output
        return parsed
    return None


def output_of(row: Mapping[str, Any]) -> Any:
    """The task's output as a structured-output format's tool passes it.

    The row's ``output`` (any JSON value) when it has one; else its ``model_output``
    parsed when that is a JSON object, array or number; else ``model_output`` itself.
    """
    if row.get("output") is not None:
        return row["output"]
    text = row.get("model_output")
    parsed = _structured(text)
    return text if parsed is None else parsed


def expected_of(row: Mapping[str, Any]) -> Any:
    """The row's expected answer: its ``scenario_result``, else its ``ground_truth``."""
    expected = row.get("scenario_result")
    return row.get("ground_truth") if expected is None else expected


def messages_of(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The row's ``messages``, or built from its scenario_input and model_output."""
    given = row.get("messages")
    if given is not None:
        return [dict(m) if isinstance(m, Mapping) else m for m in given]
    built: list[dict[str, Any]] = []
    if row.get("scenario_input") is not None:
        prompt = row["scenario_input"]
        built.append(
            {"role": "user", "content": prompt if isinstance(prompt, str) else json.dumps(prompt)}
        )
    if row.get("model_output") is not None:
        built.append({"role": "assistant", "content": row["model_output"]})
    return built


def row_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row's fields that hold a value, without its index."""
    return {k: v for k, v in row.items() if k != "i" and v is not None}


def as_dict(value: Any, key: str) -> Any:
    """``value`` when it is a dict, else ``{key: value}``."""
    return value if isinstance(value, dict) else {key: value}


class Record(dict[str, Any]):
    """A dict whose keys are also attributes: LangSmith's ``run.outputs`` and ``example.inputs``
    work on it as on the SDK's ``Run`` and ``Example``, and it stays JSON."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None
