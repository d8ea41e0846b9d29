"""The rows of a ``POST /v1/runs`` body, checked without a model per row.

FastAPI reads the body into :class:`~engine.api.schemas.RunRequest`, which validates
the checks, limits and labels and leaves the rows as they were sent (they are documented
as rows all the same). :func:`sent_rows` then checks the rows in one pass
(:func:`engine.row_dumps.stored_rows_of`), to be stored as they were sent. When that
pass cannot vouch for every row, the rows are validated as :class:`~engine.models.Row` values,
as before: a bad row is the same 422 naming its index and field
(:mod:`engine.http.problems` words it), and rows the model accepts are Rows.

A body FastAPI itself finds wrong (a bad check reference, an unknown key) has its errors
made again by :class:`~engine.api.schemas.RunRequestChecked` (:func:`checked_errors`), so
its bad rows are named beside them, as when the model validated every row.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi.exceptions import RequestValidationError
from pydantic import Field, TypeAdapter, ValidationError

from engine.api.schemas import RunRequest, RunRequestChecked
from engine.models import Row
from engine.row_dumps import StoredRows, stored_rows_of

__all__ = ["RowErrors", "checked_errors", "sent_rows"]

_ROWS: TypeAdapter[list[Row]] = TypeAdapter(Annotated[list[Row], Field(min_length=1)])


class RowErrors(RequestValidationError):
    """A body's rows failed the Row model: its errors are final (:func:`checked_errors`
    leaves them be)."""


def _located(exc: ValidationError, prefix: tuple[str, ...]) -> list[dict[str, Any]]:
    """``exc``'s errors under ``prefix``, as FastAPI locates a body's errors."""
    return [{**e, "loc": (*prefix, *e["loc"])} for e in exc.errors(include_url=False)]


def sent_rows(body: RunRequest) -> StoredRows | list[Row]:
    """The body's rows as a run stores them, checked in one pass; else as Rows validated
    by the model. Raises :class:`RowErrors` (a 422 naming each bad row) if one is bad."""
    checked = stored_rows_of(body.rows)
    if checked is not None:
        return checked
    try:
        return _ROWS.validate_python(body.rows, from_attributes=True)
    except ValidationError as exc:
        raise RowErrors(_located(exc, ("body", "rows")), body={"rows": body.rows}) from None


def checked_errors(exc: RequestValidationError) -> RequestValidationError:
    """``exc`` (a query parameter's errors, the body's) with its body's errors those of
    :class:`RunRequestChecked`: the rows' too, which :class:`RunRequest` does not validate.
    A body that is not a JSON object, or rows already worded, are left as they are."""
    body = exc.body
    if isinstance(exc, RowErrors) or not isinstance(body, dict):
        return exc
    try:
        RunRequestChecked.model_validate(body, from_attributes=True)
    except ValidationError as checked:
        others = [e for e in exc.errors() if tuple(e.get("loc", ()))[:1] != ("body",)]
        return RequestValidationError(others + _located(checked, ("body",)), body=body)
    return exc
