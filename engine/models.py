"""Values that cross boundaries: rows, limits and row results."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.contract import Status
from engine.json_limits import FreeJSON

M = TypeVar("M", bound=BaseModel)


def unchecked(cls: type[M], values: dict[str, Any], fields_set: set[str]) -> M:
    """A ``cls`` holding ``values`` (every field, each already checked), made the way
    pydantic's ``model_construct`` makes one, without its loop over the fields: for the
    paths that make one a row (a block's RowResults, a run's stored Rows)."""
    made = cls.__new__(cls)
    object.__setattr__(made, "__dict__", values)
    object.__setattr__(made, "__pydantic_fields_set__", fields_set)
    object.__setattr__(made, "__pydantic_extra__", None)
    object.__setattr__(made, "__pydantic_private__", None)
    return made


class Row(BaseModel):
    """One datapoint to score."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | int | None = Field(default=None, description="Client row id, echoed in results.")
    model_output: str = Field(description="The output of the model under evaluation.")
    scenario_input: FreeJSON = Field(
        default=None, description="The scenario's input (str or JSON)."
    )
    scenario_result: FreeJSON = Field(
        default=None, description="The expected answer (str or JSON)."
    )
    model_input: str | None = Field(default=None, description="The exact input sent to the model.")
    metadata: dict[str, FreeJSON] = Field(default_factory=dict, description="Free-form metadata.")
    # Other scorer formats' own row fields (engine.contract.formats binds them).
    messages: list[dict[str, FreeJSON]] | None = Field(
        default=None,
        description="An OpenAI chat list for reward-kit functions (else built from "
        "scenario_input and model_output).",
    )
    item: dict[str, FreeJSON] | None = Field(
        default=None, description="An OpenAI grader's `item` (else the row's fields)."
    )
    sample: dict[str, FreeJSON] | None = Field(
        default=None, description="An OpenAI grader's `sample` (else built from model_output)."
    )
    vars: dict[str, FreeJSON] | None = Field(
        default=None, description="promptfoo's test `vars` (else the row's metadata)."
    )
    ground_truth: FreeJSON = Field(
        default=None, description="reward-kit's `ground_truth` (else scenario_result)."
    )
    output: FreeJSON = Field(
        default=None,
        description="The task's output as it was returned (any JSON value), for the formats "
        "whose tools pass structured outputs (else model_output, parsed when it is JSON).",
    )

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        """Refuse unknown fields with a message naming the accepted ones."""
        if isinstance(data, dict):
            unknown = [str(key) for key in data if key not in _ROW_FIELDS]
            if unknown:
                raise ValueError(
                    f"unknown row field(s) {', '.join(sorted(unknown))}; a row may have "
                    f"{', '.join(cls.model_fields)}"
                )
        return data

    @classmethod
    def stored(cls, data: dict[str, Any]) -> Row:
        """A Row from what the service stored after validating it (``model_dump(mode="json")``
        of a Row): made without validating each field again, the way a run's chunks load
        their rows. A whole dump (every field) becomes the Row's own values, not a copy: the
        caller hands it over. Anything else in ``data`` (an unknown key) is validated as
        usual."""
        if data.keys() == _ROW_FIELDS:  # a whole dump, as the service stores one: taken as is
            return unchecked(cls, data, set(_ROW_FIELDS))
        if not _ROW_FIELDS.issuperset(data):
            return cls.model_validate(data)
        values = {
            name: data[name] if name in data else info.get_default(call_default_factory=True)
            for name, info in cls.__pydantic_fields__.items()
        }
        return unchecked(cls, values, set(data))


#: Row's field names (the validator above runs once a row: ``model_fields`` is too slow).
_ROW_FIELDS = frozenset(Row.__pydantic_fields__)


class Limits(BaseModel):
    """Resource limits of one sandbox job. A request may lower them, never raise them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    row_timeout_seconds: float = Field(default=5.0, gt=0, le=600)
    wall_seconds_max: float = Field(
        default=300.0, gt=0, le=3600, description="Cap on one job's wall clock."
    )
    memory_mb: int = Field(default=256, ge=32, le=65536)
    max_pids: int = Field(default=64, ge=8, le=4096)
    cpus: float = Field(default=1.0, gt=0, le=64)
    max_output_bytes: int = Field(
        default=1024 * 1024, ge=1024, description="What the check may print, per job."
    )
    max_record_bytes: int = Field(default=64 * 1024, ge=1024, description="One result record.")
    tmpfs_mb: int = Field(default=16, ge=1, le=4096)
    max_open_files: int = Field(default=256, ge=16, le=65536)
    max_file_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)

    def job_wall_seconds(self, rows: int) -> float:
        """Wall clock for a job of ``rows`` rows: per-row timeouts plus start-up, capped."""
        return min(self.wall_seconds_max, 10.0 + rows * self.row_timeout_seconds)

    def lowered_by(self, other: Limits | None) -> Limits:
        """These limits, each lowered to ``other``'s where that is lower."""
        if other is None:
            return self
        values = {
            name: min(getattr(self, name), getattr(other, name)) for name in type(self).model_fields
        }
        return Limits(**values)

    @property
    def profile(self) -> str:
        """A stable key of these limits (warm pools are kept per profile)."""
        return ",".join(f"{k}={getattr(self, k)}" for k in sorted(type(self).model_fields))


class RowResult(BaseModel):
    """The outcome of one check on one row."""

    model_config = ConfigDict(extra="forbid")

    row_id: str | int | None = None
    check: str | None = None
    version: int | None = None
    status: Status
    score: bool | int | float | None = None
    explanation: str | None = None
    error: str | None = None
    output: str | None = Field(default=None, description="What the check printed (capped).")
    duration_ms: float = 0.0
    model: str | None = Field(
        default=None, description="The model that served the check's model-gateway calls."
    )
    passed: bool | None = Field(
        default=None,
        description="The check's own pass flag, for formats that have one (promptfoo, a bool).",
    )
    metadata: dict[str, Any] | None = Field(
        default=None, description="Sub-scores and extra result keys the check returned."
    )

    @field_validator("score")
    @classmethod
    def _finite(cls, value: bool | int | float | None) -> bool | int | float | None:
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("score must be finite")
        return value


#: A row with its index among the caller's rows: the index of the row in the run or in the
#: ``/v1/score`` request. It is the one index space from the route to the sandbox and back.
IndexedRow: TypeAlias = tuple[int, Row]

#: Called once per scored row with the row's index (as it came in its :data:`IndexedRow`)
#: and its result; the one result-callback type of every executor and of the sandbox runner.
ResultCallback: TypeAlias = Callable[[int, RowResult], None]


@dataclass(frozen=True)
class ResultColumns:
    """Consecutive results of one check as columns: a sandbox result block on its way to
    storage, with no :class:`RowResult` made per row."""

    row_index: Sequence[int]
    status: Sequence[str]
    score: Sequence[bool | int | float | None]
    duration_ms: Sequence[float]
    #: By position: the rows with more than a status and a score (``explanation``,
    #: ``error``, ``output``, ``passed``, ``metadata``, ``model``, as RowResult names them).
    extras: Mapping[int, Mapping[str, Any]]

    def __len__(self) -> int:
        return len(self.row_index)
