"""What is wrong with a row, in one wording everywhere: a data file's line in the CLI
(``rows.jsonl:3: unknown column(s) answer; expected columns: model_output (required),
id, ...``) and a row of ``/v1/runs``, ``/v1/score`` or ``/v1/runs/upload`` in the API
(``row 2 (rows[1]): unknown field(s) answer; expected fields: ...``).

Pure: the caller says where the row is (a file's line, a request's row, numbered from
1) and adds what only it can suggest (the CLI's ``--map``). No pydantic text reaches a
user: no "validation error for Row", no link to pydantic's site.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from engine.models import Row

#: The fields a row may have, model_output first (it is the one required).
ROW_FIELDS: tuple[str, ...] = (
    "model_output",
    *(f for f in Row.model_fields if f != "model_output"),
)


def expected(noun: str = "field") -> str:
    """``expected fields: model_output (required), id, ...`` (``noun``: field or column)."""
    return f"expected {noun}s: model_output (required), {', '.join(ROW_FIELDS[1:])}"


def shape_problem(record: Any, noun: str = "field") -> str | None:
    """What is wrong with a row's shape (not an object, unknown fields, no string
    ``model_output``), or None when its shape is right."""
    if not isinstance(record, Mapping):
        return f"expected a JSON object; {expected(noun)}"
    unknown = sorted(str(key) for key in record if key not in ROW_FIELDS)
    if unknown:
        return f"unknown {noun}(s) {', '.join(unknown)}; {expected(noun)}"
    output = record.get("model_output")
    if not isinstance(output, str):
        missing = "missing" if output is None else "not a string"
        return f"model_output is {missing}; {expected(noun)}"
    return None


def value_problem(exc: ValidationError) -> str:
    """A Row's validation errors as one line: each field and what is wrong with it (the
    alternatives of a union as one: ``id: Input should be a valid string or a valid
    integer``)."""
    by_field: dict[str, list[str]] = {}
    for error in exc.errors(include_url=False):
        where = str(error["loc"][0]) if error["loc"] else ""
        message = str(error["msg"]).removeprefix("Value error, ")
        said = by_field.setdefault(where, [])
        if said:
            message = message.removeprefix("Input should be ")
        if message not in said:
            said.append(message)
    return "; ".join(
        f"{where}: {' or '.join(said)}" if where else " or ".join(said)
        for where, said in by_field.items()
    )


def row_problem(record: Any) -> str | None:
    """Everything wrong with one row of a request, or None when it is a valid Row."""
    problem = shape_problem(record)
    if problem is not None:
        return problem
    try:
        Row.model_validate(record)
    except ValidationError as exc:
        return value_problem(exc)
    return None


def request_row(index: int) -> str:
    """Where row ``index`` (from 0) of a request's ``rows`` is: ``row 2 (rows[1])``."""
    return f"row {index + 1} (rows[{index}])"
