"""Okareo's ``CodeBasedCheck``, scorebox's own format: ``evaluate`` (or a class ``Check``)
takes any of the row's fields by name and returns a score. Carried into the sandbox image
(stdlib only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.contract.formats.keywords import bind_keywords
from engine.contract.formats.shapes import FunctionShape
from engine.contract.formats.spec import (
    Arguments,
    Format,
    FormatAdapter,
    FormatSpec,
    MessageFactory,
)
from engine.contract.params import ENTRYPOINT_CLASS, ENTRYPOINT_FUNCTION, PARAMETER_NAMES
from engine.contract.returns import coerce_score

SPEC = FormatSpec(
    Format.OKAREO,
    "Okareo CodeBasedCheck",
    (ENTRYPOINT_FUNCTION,),
    {
        "model_output": "the row's model_output",
        "scenario_input": "the row's scenario_input (missing: the row is skipped)",
        "scenario_result": "the row's scenario_result (missing: the row is skipped)",
        "metadata": "the row's metadata ({} when absent)",
        "model_input": "the row's model_input",
    },
    (
        "bool, int or float",
        "(score, explanation)",
        "CheckResponse(score, explanation, metadata)",
        '{"score", "explanation"?, "metadata"?}',
    ),
    entry_class=ENTRYPOINT_CLASS,
    example=(
        "from okareo.checks import CodeBasedCheck\n\n\n"
        "class Check(CodeBasedCheck):\n"
        "    @staticmethod\n"
        "    def evaluate(model_output: str, scenario_result: str) -> bool:\n"
        "        return model_output.strip() == scenario_result.strip()\n"
    ),
)


def fits(shape: FunctionShape) -> bool:
    """``evaluate`` may take any of the row's fields, or none."""
    return not shape.var_positional and all(n in PARAMETER_NAMES for n in shape.required)


def bind(
    shape: FunctionShape,
    row: Mapping[str, Any],
    message: MessageFactory | None = None,
    config: Mapping[str, Any] | None = None,
) -> Arguments:
    """Each parameter gets the row's field of its name (``metadata``: ``{}`` when absent)."""
    values = {name: row.get(name) for name in PARAMETER_NAMES}
    values["metadata"] = row.get("metadata") or {}
    return [], bind_keywords(SPEC, shape, values, config)


ADAPTER = FormatAdapter(SPEC, fits=fits, bind=bind, coerce=coerce_score)
