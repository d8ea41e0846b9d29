"""Request and response bodies of ``/v0``, with Okareo's field names (they stay at this edge)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _In(BaseModel):
    """Request bodies: fields scorebox does not use are ignored (the SDK sends some)."""

    model_config = ConfigDict(extra="allow")


class ProjectOut(BaseModel):
    id: str
    name: str
    onboarding_status: str = "complete"
    tags: list[str] = Field(default_factory=list)


class CheckIn(_In):
    """``POST /v0/check_create_or_update``."""

    check_id: str | None = None
    name: str | None = None
    description: str | None = None
    check_config: dict[str, Any] | None = Field(
        default=None,
        description="`{code_contents}` (the whole .py file of a CodeBasedCheck) or "
        "`{prompt_template, type}` (a ModelBasedCheck; type `score` or `pass_fail`).",
    )
    project_id: str | None = None
    tags: list[str] | None = None


class OkareoCheckOut(BaseModel):
    """A check version as Okareo's ``EvaluatorDetailedResponse`` / ``EvaluatorBriefResponse``."""

    id: str
    project_id: str | None = None
    name: str
    description: str = ""
    requires_scenario_input: bool = False
    requires_scenario_result: bool = False
    output_data_type: str = ""
    code_contents: str = ""
    time_created: datetime | None = None
    warning: str | None = None
    check_config: dict[str, Any] | None = None
    is_predefined: bool = False
    version: int | None = None
    tags: list[str] = Field(default_factory=list)


class GenerateIn(_In):
    """``POST /v0/check_generate`` (Okareo's ``EvaluatorSpecRequest``)."""

    name: str | None = None
    user_input: str | None = None
    description: str | None = None
    requires_scenario_input: bool = False
    requires_scenario_result: bool = False
    output_data_type: str | None = None
    project_id: str | None = None
    check_type: str | None = "code"
    prior_code: str | None = None
    prior_prompt: str | None = None


class GenerateOut(BaseModel):
    name: str | None = None
    description: str | None = None
    requires_scenario_input: bool = False
    requires_scenario_result: bool = False
    output_data_type: str | None = None
    generated_code: str | None = None
    generated_prompt: str | None = None
    warning: str | None = None


class ModelIn(_In):
    """``POST /v0/register_model``."""

    name: str = Field(min_length=1, max_length=200)
    models: dict[str, Any] | None = None
    version: int = 1
    tags: list[str] = Field(default_factory=list)
    project_id: str | None = None
    update: bool | None = False


class ModelOut(BaseModel):
    id: str
    project_id: str
    name: str
    tags: list[str]
    time_created: str
    version: int = 1
    models: dict[str, Any] | None = None
    app_link: str = ""
    warning: str | None = None


class SeedIn(_In):
    input: Any = None
    result: Any = None


class ScenarioSetIn(_In):
    """``POST /v0/scenario_sets``."""

    name: str = Field(min_length=1, max_length=200)
    seed_data: list[SeedIn] = Field(min_length=1)
    project_id: str | None = None
    generation_type: str | None = Field(default="SEED", max_length=40)


class DataPointOut(BaseModel):
    id: str
    input: Any = None
    result: Any = None
    meta_data: dict[str, Any] | None = None


class ScenarioSetOut(BaseModel):
    project_id: str
    time_created: datetime
    type: str
    scenario_id: str
    tags: list[str] = Field(default_factory=list)
    name: str
    seed_data: list[dict[str, Any]] = Field(default_factory=list)
    scenario_count: int = 0
    scenario_input: list[str] = Field(default_factory=list)
    app_link: str = ""
    warning: str | None = None


class TestRunIn(_In):
    """``POST /v0/test_run`` (Okareo's ``TestRunPayloadV2``)."""

    mut_id: str = Field(max_length=36)
    scenario_id: str = Field(max_length=36)
    # the test run's columns (checked before the run is submitted: a refusal leaves nothing)
    name: str | None = Field(default=None, max_length=400)
    type: str | None = Field(default=None, max_length=40)
    tags: list[str] = Field(default_factory=list)
    model_results: dict[str, Any] | None = Field(
        default=None,
        description="`{model_data: {<data point id>: {actual, model_response, model_input, "
        "error_message}}}`, as `run_test` sends it for a CustomModel.",
    )
    checks: list[str] | None = Field(
        default=None, description="Check names, or check ids (a check id pins that version)."
    )
    project_id: str | None = None


class TestRunOut(BaseModel):
    """Okareo's ``TestRunItem``."""

    id: str
    project_id: str
    mut_id: str | None = None
    scenario_set_id: str | None = None
    name: str | None = None
    tags: list[str] = Field(default_factory=list)
    type: str | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    time_created: datetime | None = None
    test_data_point_count: int = 0
    model_metrics: dict[str, Any] | None = None
    status: str
    failure_message: str | None = None
    progress: float = 0.0
    app_link: str = Field(default="", description="scorebox: the run's path, `/v1/runs/{id}`.")


class FindTestDataPointsIn(_In):
    """``POST /v0/find_test_data_points``."""

    id: str | None = None
    test_run_id: str | None = None
    scenario_data_point_id: str | None = None
    metric_type: str | None = None
    full_data_point: bool | None = False
