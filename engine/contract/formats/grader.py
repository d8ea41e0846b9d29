"""OpenAI / Azure python graders: ``grade(sample, item)`` returning a number. Carried into
the sandbox image (stdlib only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.contract.formats.results import finish, refuse_none
from engine.contract.formats.rows import parsed_json, row_fields
from engine.contract.formats.shapes import FunctionShape
from engine.contract.formats.spec import (
    Arguments,
    Format,
    FormatAdapter,
    FormatSpec,
    MessageFactory,
    fits_positionally,
)
from engine.contract.returns import InvalidScore, Score
from engine.contract.statuses import OutputType

SPEC = FormatSpec(
    Format.GRADER,
    "OpenAI / Azure python grader",
    ("grade",),
    {
        "sample": 'the row\'s sample, else {"output_text": model_output, '
        '"output_json": model_output parsed when it is JSON, "choices": [...]}',
        "item": "the row's item, else the row's fields as a dict",
    },
    ("a number (documented range 0..1)",),
    ("anything that is not a finite number is invalid_score (OpenAI grades it 0)",),
    positional=2,
    guess_rank=2,
    guessable=True,
    example=(
        "def grade(sample, item) -> float:\n"
        '    return 1.0 if sample["output_text"] == item["reference"] else 0.0\n'
    ),
)


def fits(shape: FunctionShape) -> bool:
    """Two required parameters, any names."""
    return fits_positionally(SPEC, shape)


def _sample(row: Mapping[str, Any]) -> Any:
    sample = row.get("sample")
    if sample is not None:
        return sample
    output = row.get("model_output")
    return {
        "output_text": output,
        "output_json": parsed_json(output),
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": output},
            }
        ],
    }


def bind(
    shape: FunctionShape,
    row: Mapping[str, Any],
    message: MessageFactory | None = None,
    config: Mapping[str, Any] | None = None,
) -> Arguments:
    """``(sample, item)``: the row's own, else built from its model_output and fields."""
    item = row.get("item")
    if item is None:
        item = row_fields(row)
    return [_sample(row), item], {}


def coerce(value: Any, expected: OutputType | None = None) -> Score:
    """A finite number; anything else is invalid (OpenAI grades it 0)."""
    refuse_none(SPEC, value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidScore(f"a grader returns a number, got {type(value).__name__}")
    return finish(float(value), expected)


ADAPTER = FormatAdapter(SPEC, fits=fits, bind=bind, coerce=coerce)
