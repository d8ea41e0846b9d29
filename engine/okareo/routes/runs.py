"""``/v0`` projects, models, scenario sets and test runs (Okareo SDK shapes and codes).

A test run is a scorebox run: ``POST /v0/test_run`` submits the CustomModel's
outputs with the named checks through the same run service as ``/v1/runs``
(so it shows in ``GET /v1/runs`` and ``scorebox run`` listings, labelled
``okareo_test_run``), waits for it, and answers Okareo's ``TestRunItem``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, UploadFile

from engine.audit import hooks
from engine.catalog.ids import check_uuid
from engine.errors import InvalidRequestError, NotFoundError
from engine.http.deps import AuditDep, RunsDep, StoreDep
from engine.http.problems import responses
from engine.json_limits import json_problem
from engine.names import BUILTIN_PREFIX
from engine.nul import nul_problem
from engine.okareo import translate
from engine.okareo.routes.checks import TAG
from engine.okareo.routes.deps import OkareoPrincipalDep, OkareoStoreDep, project_of
from engine.okareo.schemas import (
    DataPointOut,
    FindTestDataPointsIn,
    ModelIn,
    ModelOut,
    ProjectOut,
    ScenarioSetIn,
    ScenarioSetOut,
    TestRunIn,
    TestRunOut,
)
from engine.okareo.store import (
    OkareoStore,
    Project,
    RegisteredModel,
    ScenarioPoint,
    ScenarioSet,
    TestRun,
    builtin_uuid,
    new_uuid,
)
from engine.storage import Run, Store, StoredResult, utcnow

router = APIRouter(prefix="/v0", tags=[TAG])

#: How long ``POST /v0/test_run`` waits for its run (the SDK's client has no timeout);
#: past it the test run answers RUNNING and ``GET /v0/test_runs/{id}`` follows it.
TEST_RUN_WAIT_SECONDS = 600.0
#: Upload size of a scenario set file.
MAX_UPLOAD_BYTES = 32 * 1024 * 1024


# ---- projects ----------------------------------------------------------------------------


def _project_out(project: Project) -> ProjectOut:
    return ProjectOut(id=project.id, name=project.name)


@router.get(
    "/projects",
    response_model=list[ProjectOut],
    status_code=201,
    summary="List projects (Okareo: the client's constructor, get_projects)",
    description="Each tenant has one project, `Global`.",
    responses=responses(401),
)
def list_projects(okareo: OkareoStoreDep, principal: OkareoPrincipalDep) -> list[ProjectOut]:
    return [_project_out(p) for p in okareo.list_projects(principal.tenant_id)]


@router.get(
    "/projects/{project_id}",
    response_model=ProjectOut,
    status_code=201,
    summary="Get a project (Okareo: get_project)",
    responses=responses(401, 404),
)
def get_project(
    project_id: str, okareo: OkareoStoreDep, principal: OkareoPrincipalDep
) -> ProjectOut:
    okareo.default_project(principal.tenant_id)
    return _project_out(project_of(okareo, principal.tenant_id, project_id))


# ---- models ------------------------------------------------------------------------------


@router.post(
    "/register_model",
    response_model=ModelOut,
    status_code=201,
    summary="Register a model under test (Okareo: register_model)",
    description="A name and its model descriptions. scorebox calls no models: register a "
    "CustomModel, whose outputs `run_test` sends. An existing name is returned unchanged "
    "unless `update` is true.",
    responses=responses(401, 404, 422),
)
def register_model(
    body: ModelIn, okareo: OkareoStoreDep, principal: OkareoPrincipalDep, audit: AuditDep
) -> ModelOut:
    project = project_of(okareo, principal.tenant_id, body.project_id)
    model = okareo.register_model(
        principal.tenant_id,
        project.id,
        body.name,
        body.tags,
        dict(body.models or {}),
        bool(body.update),
    )
    hooks.model_registered(audit, principal, model.id, model.name)
    return _model_out(model)


def _model_out(model: RegisteredModel) -> ModelOut:
    return ModelOut(
        id=model.id,
        project_id=model.project_id,
        name=model.name,
        tags=model.tags,
        time_created=model.created_at.isoformat(),
        version=model.version,
        models=model.models,
    )


@router.get(
    "/models_under_test/{name}/{version}",
    response_model=ModelOut,
    status_code=201,
    summary="A registered model by name (Okareo: get_model)",
    description="`version` is `latest` or `1` (scorebox keeps one version of a model).",
    responses=responses(401, 404),
)
def get_model(
    name: str, version: str, okareo: OkareoStoreDep, principal: OkareoPrincipalDep
) -> ModelOut:
    project = okareo.default_project(principal.tenant_id)
    model = okareo.get_model_by_name(principal.tenant_id, project.id, name)
    if version not in ("latest", str(model.version)):
        raise NotFoundError(f"model {name!r} has version {model.version} only, not {version}")
    return _model_out(model)


# ---- scenario sets -----------------------------------------------------------------------


def _scenario_out(scenario: ScenarioSet, points: list[ScenarioPoint]) -> ScenarioSetOut:
    return ScenarioSetOut(
        project_id=scenario.project_id,
        time_created=scenario.created_at,
        type=scenario.type,
        scenario_id=scenario.id,
        tags=scenario.tags,
        name=scenario.name,
        seed_data=[{"input": p.input, "result": p.result} for p in points],
        scenario_count=len(points),
        scenario_input=[translate_text(p.input) for p in points],
    )


def translate_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@router.post(
    "/scenario_sets",
    response_model=ScenarioSetOut,
    status_code=201,
    summary="Create a scenario set from seed data (Okareo: create_scenario_set)",
    responses=responses(401, 404, 422),
)
def create_scenario_set(
    body: ScenarioSetIn, okareo: OkareoStoreDep, principal: OkareoPrincipalDep, audit: AuditDep
) -> ScenarioSetOut:
    project = project_of(okareo, principal.tenant_id, body.project_id)
    scenario, points = okareo.create_scenario_set(
        principal.tenant_id,
        project.id,
        body.name,
        body.generation_type or "SEED",
        [(s.input, s.result, None) for s in body.seed_data],
    )
    hooks.scenario_set_created(audit, principal, scenario.id, scenario.name, len(points))
    return _scenario_out(scenario, points)


def parse_jsonl(name: str, raw: bytes) -> list[tuple[Any, Any, dict[str, Any] | None]]:
    """Scenario rows from a JSONL file: one ``{"input": ..., "result": ...}`` object a line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(f"{name}: not UTF-8 text ({exc})") from exc
    rows: list[tuple[Any, Any, dict[str, Any] | None]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidRequestError(f"{name} line {number}: not JSON ({exc.msg})") from exc
        except RecursionError as exc:
            raise InvalidRequestError(
                f"{name} line {number}: nested too deep to read; flatten it"
            ) from exc
        if not isinstance(item, dict) or "input" not in item:
            raise InvalidRequestError(
                f'{name} line {number}: expected an object with "input" and "result"'
            )
        # before anything is stored: a lone surrogate or a NUL could never be written back
        problem = json_problem(item, f"{name} line {number}") or nul_problem(
            item, f"{name} line {number}"
        )
        if problem is not None:
            raise InvalidRequestError(problem)
        meta = item.get("meta_data")
        rows.append((item["input"], item.get("result"), meta if isinstance(meta, dict) else None))
    if not rows:
        raise InvalidRequestError(f"{name}: no scenario rows (one JSON object a line)")
    return rows


@router.post(
    "/scenario_sets_upload",
    response_model=ScenarioSetOut,
    status_code=200,
    summary="Create a scenario set from a JSONL file (Okareo: upload_scenario_set)",
    description='Multipart: `name`, optional `project_id`, `file` with one `{"input": ..., '
    '"result": ...}` object a line.',
    responses=responses(401, 404, 422),
)
async def upload_scenario_set(
    okareo: OkareoStoreDep,
    principal: OkareoPrincipalDep,
    audit: AuditDep,
    name: Annotated[
        str, Form(min_length=1, max_length=200, description="The scenario set's name.")
    ],
    file: Annotated[
        UploadFile,
        File(description='JSONL: one `{"input": ..., "result": ...}` object a line.'),
    ],
    project_id: Annotated[
        str | None, Form(description="The project (default: the tenant's default project).")
    ] = None,
) -> ScenarioSetOut:
    raw = await file.read(MAX_UPLOAD_BYTES + 1)
    if len(raw) > MAX_UPLOAD_BYTES:
        raise InvalidRequestError(f"{file.filename}: larger than {MAX_UPLOAD_BYTES} bytes")
    rows = parse_jsonl(file.filename or "upload", raw)
    project = project_of(okareo, principal.tenant_id, project_id)
    scenario, points = okareo.create_scenario_set(
        principal.tenant_id, project.id, name, "SEED", rows
    )
    hooks.scenario_set_created(audit, principal, scenario.id, scenario.name, len(points))
    return _scenario_out(scenario, points)


@router.get(
    "/scenario_data_points/{scenario_id}",
    response_model=list[DataPointOut],
    status_code=200,
    summary="A scenario set's data points (Okareo: get_scenario_data_points)",
    responses=responses(401, 404),
)
def scenario_data_points(
    scenario_id: str, okareo: OkareoStoreDep, principal: OkareoPrincipalDep
) -> list[DataPointOut]:
    return [
        DataPointOut(id=p.id, input=p.input, result=p.result, meta_data=p.meta_data)
        for p in okareo.scenario_points(principal.tenant_id, scenario_id)
    ]


# ---- test runs ---------------------------------------------------------------------------


def _refs(checks: list[str], builtin_names: list[str]) -> list[str]:
    """Okareo check references → scorebox's: a built-in's UUID becomes ``builtin:NAME``.

    ``builtin:`` reaches the built-in even when a check of the tenant's shadows
    it. Names and check-version UUIDs pass as they are (the catalog resolves both).
    """
    by_uuid = {builtin_uuid(name): f"{BUILTIN_PREFIX}{name}" for name in builtin_names}
    return [by_uuid.get(ref, ref) for ref in checks]


def _one_per_name(asked: list[str], names: list[str]) -> None:
    """Refuse two references to checks of one name (a name and a pinned id, or a check and
    the built-in it shadows): Okareo keys each row's results by check name, so the second
    would overwrite the first and their scores would mix in one mean."""
    first: dict[str, str] = {}
    for ref, name in zip(asked, names, strict=True):
        if name in first:
            raise InvalidRequestError(
                f"checks {first[name]!r} and {ref!r} are both named {name!r}: Okareo keys "
                "each row's results by check name, so list one of them (to compare two "
                "versions, run the test twice)"
            )
        first[name] = ref


def _columns(run_checks: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": rc.name,
            "version": rc.version,
            "id": check_uuid(rc.id) if rc.id else builtin_uuid(rc.name),
        }
        for rc in run_checks
    ]


def _wait(store: Store, tenant_id: str, run_id: str) -> Run:
    deadline = time.monotonic() + TEST_RUN_WAIT_SECONDS
    delay = 0.05
    while True:
        run = store.get_run(tenant_id, run_id)
        if not run.status.active or time.monotonic() > deadline:
            return run
        time.sleep(delay)
        delay = min(0.5, delay * 1.5)


def _results(store: Store, run: Run | None) -> dict[tuple[int, int], StoredResult]:
    if run is None:
        return {}
    page = store.results_page(run.id, 0, max(1, run.total_results))
    return {(r.check_index, r.row_index): r for r in page}


def render_test_run(test_run: TestRun, run: Run | None, results: Mapping[Any, Any]) -> TestRunOut:
    """Okareo's ``TestRunItem`` for a test run and its scorebox run."""
    status, failure = "FINISHED", test_run.failure_message
    progress = 100.0
    if run is not None:
        status = translate.STATUS[run.status]
        failure = run.error or (
            "the run was cancelled" if run.status.value == "cancelled" else None
        )
        total = run.total_results
        progress = 100.0 * len(results) / total if total else 100.0
    return TestRunOut(
        id=test_run.id,
        project_id=test_run.project_id,
        mut_id=test_run.mut_id,
        scenario_set_id=test_run.scenario_id,
        name=test_run.name,
        tags=test_run.tags,
        type=test_run.type,
        start_time=run.started_at if run else test_run.created_at,
        end_time=run.finished_at if run else test_run.created_at,
        time_created=test_run.created_at,
        test_data_point_count=len(test_run.points),
        model_metrics=translate.model_metrics(test_run.checks, test_run.points, results),
        status=status,
        failure_message=failure,
        progress=progress,
        app_link=f"/v1/runs/{run.id}" if run else "",
    )


def _load(store: Store, okareo: OkareoStore, tenant_id: str, test_run_id: str) -> TestRunOut:
    test_run = okareo.get_test_run(tenant_id, test_run_id)
    run = store.get_run(tenant_id, test_run.run_id) if test_run.run_id else None
    return render_test_run(test_run, run, _results(store, run))


@router.post(
    "/test_run",
    response_model=TestRunOut,
    status_code=201,
    summary="Score a model's outputs on a scenario set (Okareo: ModelUnderTest.run_test)",
    description="`model_results.model_data` holds the CustomModel's outputs keyed by scenario "
    "data point id; `checks` names checks (a check id pins that version). The outputs are "
    "scored as a scorebox run (listed by `GET /v1/runs`, `app_link` is its path); the call "
    "waits for it. Data points the model failed on (`error_message`) are not scored.",
    responses=responses(401, 404, 422, 429),
)
def run_test(
    body: TestRunIn,
    store: StoreDep,
    runs: RunsDep,
    okareo: OkareoStoreDep,
    principal: OkareoPrincipalDep,
    audit: AuditDep,
) -> TestRunOut:
    tenant_id = principal.tenant_id
    project = project_of(okareo, tenant_id, body.project_id)
    model = okareo.get_model(tenant_id, body.mut_id)
    points = okareo.scenario_points(tenant_id, body.scenario_id)
    model_data = (body.model_results or {}).get("model_data")
    if not isinstance(model_data, dict):
        raise InvalidRequestError(
            "scorebox scores outputs your code produced and calls no models: register a "
            "CustomModel (okareo.register_model(name, model=MyModel(name))) and call run_test on it"
        )
    if not body.checks:
        raise InvalidRequestError("name the checks to run: mut.run_test(..., checks=[...])")
    refs = _refs(list(body.checks), list(runs.builtins))
    resolved = runs.resolve_checks(principal, refs)
    _one_per_name(list(body.checks), [c.name for c in resolved])
    test_points, rows = translate.test_points(points, model_data)
    test_run_id = new_uuid()
    run: Run | None = None
    if rows:
        labels = {"okareo_test_run": test_run_id, "okareo_name": body.name or ""}
        run = runs.submit_run(principal, refs, rows, labels=labels)
        hooks.run_started(audit, principal, "v0", run)
        run_checks = run.checks
    else:  # the model failed on every data point: nothing to score, but the checks must exist
        run_checks = [c.to_run_check() for c in resolved]
    test_run = okareo.create_test_run(
        TestRun(
            id=test_run_id,
            tenant_id=tenant_id,
            project_id=project.id,
            mut_id=model.id,
            scenario_id=body.scenario_id,
            name=body.name,
            type=body.type,
            tags=list(body.tags),
            checks=_columns(run_checks),
            run_id=run.id if run else None,
            failure_message=None,
            created_at=utcnow(),
            points=test_points,
        )
    )
    if run is not None:
        run = _wait(store, tenant_id, run.id)
    return render_test_run(test_run, run, _results(store, run))


@router.get(
    "/test_runs/{test_run_id}",
    response_model=TestRunOut,
    status_code=201,
    summary="A test run with its scores (Okareo: get_test_run)",
    responses=responses(401, 404),
)
def get_test_run(
    test_run_id: str, store: StoreDep, okareo: OkareoStoreDep, principal: OkareoPrincipalDep
) -> TestRunOut:
    return _load(store, okareo, principal.tenant_id, test_run_id)


@router.post(
    "/find_test_data_points",
    response_model=list[dict[str, Any]],
    status_code=201,
    summary="A test run's data points with each check's value (Okareo: find_test_data_points)",
    description="By `test_run_id` (optionally narrowed by `scenario_data_point_id`) or by data "
    "point `id`. Each item has `checks` ({name: value, name__explanation}), `check_values` "
    "(scored checks) and `checks_metadata` (scorebox's status and error per check).",
    responses=responses(401, 404, 422),
)
def find_test_data_points(
    body: FindTestDataPointsIn,
    store: StoreDep,
    okareo: OkareoStoreDep,
    principal: OkareoPrincipalDep,
) -> list[dict[str, Any]]:
    tenant_id = principal.tenant_id
    if body.test_run_id:
        test_run = okareo.get_test_run(tenant_id, str(body.test_run_id))
        points = test_run.points
    elif body.id:
        test_run, point = okareo.find_test_point(tenant_id, str(body.id))
        points = [point]
    else:
        raise InvalidRequestError("give `test_run_id` or a data point `id`")
    if body.id:
        points = [p for p in points if p.id == str(body.id)]
    if body.scenario_data_point_id:
        points = [p for p in points if p.scenario_point_id == str(body.scenario_data_point_id)]
    run = store.get_run(tenant_id, test_run.run_id) if test_run.run_id else None
    results = _results(store, run)
    created = test_run.created_at.isoformat()
    return [
        translate.full_data_point(test_run.id, test_run.type, test_run.checks, p, results, created)
        for p in points
    ]
