"""``GET /v1/runs/{a}/compare/{b}`` and the dashboard's pages over the app (SQLite and PostgreSQL).

Built-in checks score in process, so no Docker is needed here; the browser
tests in tests/browser drive the same pages in chromium against ``scorebox serve``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from tests.api.conftest import Api
from tests.conftest import queued_run
from tests.fake_llm import FakeLLM


def _rows(answers: list[str]) -> list[dict[str, str]]:
    return [
        {"id": f"q{i}", "model_output": answer, "scenario_result": "yes"}
        for i, answer in enumerate(answers)
    ]


def _two_runs(api: Api, headers: dict[str, str]) -> tuple[str, str]:
    ids = []
    for answers in (["yes"] * 40, ["yes"] * 20 + ["no"] * 20):
        reply = api.client.post(
            "/v1/runs", headers=headers, json={"checks": ["exact_match"], "rows": _rows(answers)}
        )
        assert reply.status_code == 202, reply.text
        assert api.wait_run(headers, reply.json()["id"])["status"] == "succeeded"
        ids.append(reply.json()["id"])
    return ids[0], ids[1]


def test_compare_reports_deltas_with_an_interval_and_the_changed_rows(api: Api) -> None:
    a = api.tenant("a")
    run_a, run_b = _two_runs(api, a)
    reply = api.client.get(f"/v1/runs/{run_a}/compare/{run_b}", headers=a)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert (body["matched_by"], body["matched"], body["only_a"]) == ("id", 40, 0)
    (check,) = body["checks"]
    assert check["pass_rate_a"] == 1.0 and check["pass_rate_b"] == 0.5
    delta = check["pass_rate_delta"]
    assert delta["delta"] == -0.5
    assert delta["low"] <= -0.5 <= delta["high"] < 0
    assert delta["significant"] is True
    assert check["changed_total"] == 20
    assert {r["kind"] for r in check["changed"]} == {"pass_to_fail"}
    assert check["changed"][0]["key"] == "q20"
    same = api.client.get(f"/v1/runs/{run_a}/compare/{run_a}", headers=a).json()
    assert same["checks"][0]["pass_rate_delta"]["significant"] is False


def test_compare_of_another_tenants_run_is_404(api: Api) -> None:
    a, b = api.tenant("a"), api.tenant("b")
    run_a, run_b = _two_runs(api, a)
    assert api.client.get(f"/v1/runs/{run_a}/compare/{run_b}", headers=b).status_code == 404
    mine = api.client.post(
        "/v1/runs", headers=b, json={"checks": ["exact_match"], "rows": _rows(["yes"])}
    ).json()["id"]
    assert api.client.get(f"/v1/runs/{mine}/compare/{run_a}", headers=b).status_code == 404


def _sign_in(api: Api, headers: dict[str, str]) -> None:
    key = headers["Authorization"].removeprefix("Bearer ")
    reply = api.client.post("/ui/signin", data={"api_key": key}, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    cookie = reply.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert key not in cookie


def test_dashboard_pages_render_for_the_owner_and_404_for_others(api: Api) -> None:
    a = api.tenant("a")
    run_a, run_b = _two_runs(api, a)
    assert api.client.get("/ui/runs", follow_redirects=False).status_code == 303  # sign in first
    _sign_in(api, a)
    page = api.client.get(f"/ui/runs/{run_b}")
    assert page.status_code == 200
    assert 'aria-label="pass and fail of exact_match"' in page.text
    key = a["Authorization"].removeprefix("Bearer ")
    assert key not in page.text
    for page_path in (f"/ui/runs/{run_b}", f"/ui/runs/{run_b}/rows"):
        failing = api.client.get(f"{page_path}?status=ok&max=0")
        assert failing.text.count('href="/ui/runs/' + run_b + "/rows/") == 20, page_path
    exported = api.client.get(f"/ui/runs/{run_b}/export.jsonl?status=ok&max=0")
    assert len(exported.text.splitlines()) == 20
    assert api.client.get(f"/ui/compare?a={run_a}&b={run_b}").status_code == 200
    checks = api.client.get("/ui/checks")
    assert checks.status_code == 200 and "<code>exact_match</code>" in checks.text
    assert api.client.get(f"/ui/runs/{run_b}/rows/3").status_code == 200
    assert api.client.get(f"/ui/runs/{run_b}/rows/40").status_code == 404
    api.client.cookies.clear()
    b = api.tenant("b")
    _sign_in(api, b)
    assert api.client.get(f"/ui/runs/{run_a}").status_code == 404
    assert api.client.get(f"/ui/runs/{run_a}/export.csv").status_code == 404
    assert api.client.get(f"/ui/runs/{run_a}/rows").status_code == 404
    assert api.client.get(f"/ui/compare?a={run_a}&b={run_b}").status_code == 404


def test_row_export_writes_the_same_columns_in_csv_and_jsonl(api: Api) -> None:
    import csv
    import json

    a = api.tenant("a")
    _, run_b = _two_runs(api, a)
    _sign_in(api, a)
    from engine.runs.export import FIELDS

    columns = list(FIELDS)  # the columns of every export (CLI, REST, dashboard)
    jsonl = api.client.get(f"/ui/runs/{run_b}/export.jsonl?status=ok&max=0")
    assert jsonl.headers["content-disposition"] == f'attachment; filename="{run_b}.jsonl"'
    records = [json.loads(line) for line in jsonl.text.splitlines()]
    assert len(records) == 20 and all(list(r) == columns for r in records)
    first = records[0]
    assert (first["row_index"], first["row_id"], first["status"]) == (20, "q20", "ok")
    assert (first["score"], first["passed"], first["model_output"]) == (False, False, "no")
    exported = api.client.get(f"/ui/runs/{run_b}/export.csv?status=ok&max=0")
    assert exported.headers["content-type"].startswith("text/csv")
    header, *rows = list(csv.reader(exported.text.splitlines()))
    assert header == columns and len(rows) == 20
    got = dict(zip(header, rows[0], strict=True))
    assert [got[k] for k in ("row_index", "row_id", "status", "passed", "model_output")] == [
        "20",
        "q20",
        "ok",
        "false",
        "no",
    ]


def test_row_table_keyset_pages_cover_every_row_once_in_each_sort(api: Api) -> None:
    from engine.web import table

    a = api.tenant("a")
    _, run_b = _two_runs(api, a)
    for sort in table.SORTS:
        seen: list[tuple[object, int]] = []
        cursor = None
        while True:
            page = table.read_page(
                api.store.engine, run_b, table.TableFilter(sort=sort), cursor, limit=7
            )
            seen += [(r.score, r.row_index) for r in page.rows]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert sorted(i for _, i in seen) == list(range(40)), sort
        if sort == "score_asc":
            assert [s for s, _ in seen] == [False] * 20 + [True] * 20
        if sort == "score_desc":
            assert [s for s, _ in seen] == [True] * 20 + [False] * 20
    errors = table.read_page(api.store.engine, run_b, table.TableFilter(status="error"))
    assert errors.rows == [] and errors.next_cursor is None


def test_progress_answers_for_the_signed_in_tenants_runs_only(api: Api) -> None:
    a = api.tenant("a")
    run_a, run_b = _two_runs(api, a)
    assert api.client.get(f"/ui/progress?run={run_a}").status_code == 401  # no session
    _sign_in(api, a)
    body = api.client.get(f"/ui/progress?run={run_a}&run={run_b}&run=run_0000").json()
    assert set(body["runs"]) == {run_a, run_b}
    assert body["runs"][run_b] == {"status": "succeeded", "active": False, "done": 40, "total": 40}
    page = api.client.get("/ui/runs").text
    assert f'data-run="{run_a}" data-active="0"' in page
    assert '<script src="/ui/static/live.js"></script>' in page
    assert 'http-equiv="refresh"' not in page  # live.js, not a reload
    assert api.client.get("/ui/static/live.js").status_code == 200
    api.client.cookies.clear()
    _sign_in(api, api.tenant("b"))
    assert api.client.get(f"/ui/progress?run={run_a}").json() == {"runs": {}}


class _Inspect:
    def ping(self) -> dict[str, Any]:
        return {"w1@host": {"ok": "pong"}, "w2@host": {"ok": "pong"}}

    def stats(self) -> dict[str, Any]:
        return {
            "w1@host": {
                "pool": {
                    "implementation": "celery.concurrency.thread:TaskPool",
                    "max-concurrency": 4,
                }
            },
            "w2@host": {
                "pool": {
                    "implementation": "celery.concurrency.prefork:TaskPool",
                    "max-concurrency": 2,
                }
            },
        }


class _Control:
    def inspect(self, timeout: float, limit: int | None = None) -> _Inspect:
        return _Inspect()

    def broadcast(self, command: str, **kwargs: Any) -> list[dict[str, Any]]:
        assert command == "scorebox_pools"
        return [
            {"w1@host": {"warm_pools": {"default": 2, "check-containers": 1}, "chunks_in_hand": 3}},
            {"w2@host": {"warm_pools": {}, "chunks_in_hand": 0}},
        ]


class _Celery:
    control = _Control()


def test_health_page_lists_the_workers_doctor_sees_when_distributed(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.distributed.celery_app import workers_seen

    _sign_in(api, api.tenant("a"))
    assert 'aria-label="workers"' not in api.client.get("/ui/health").text  # embedded
    services = api.client.app.state.services  # type: ignore[attr-defined]
    # a broker nobody listens on: readiness says so; the workers come from the data source
    services.settings = services.settings.model_copy(update={"broker_url": "redis://127.0.0.1:9/0"})
    monkeypatch.setattr(services.runs, "workers", lambda: workers_seen(_Celery()))
    page = api.client.get("/ui/health").text
    assert "<title>Health · scorebox</title>" in page
    assert page.count('aria-label="workers"') == 1  # in the page, not also in its <title>
    table = page[page.index('aria-label="workers"') :]
    assert "<td>w1@host</td><td>thread</td><td>4</td>" in table
    assert "check-containers: 1, default: 2" in table and "<td>3</td>" in table
    assert "<td>w2@host</td><td>prefork</td><td>2</td>" in table
    monkeypatch.setattr(services.runs, "workers", lambda: {})
    assert "No <code>scorebox worker</code> answered" in api.client.get("/ui/health").text

    def unreachable() -> None:
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(services.runs, "workers", unreachable)
    assert "could not ask the workers: ConnectionRefusedError" in api.client.get("/ui/health").text


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


def test_generate_form_needs_csrf_and_shows_input_and_llm_errors(
    make_api: Any, fake_llm: FakeLLM
) -> None:
    api = make_api(
        llm_base_url=fake_llm.base_url,
        llm_api_key="test-key",
        llm_model="fake-model",
        llm_max_retries=0,
    )
    _sign_in(api, api.tenant("a"))
    form = api.client.get("/ui/checks/generate")
    assert form.status_code == 200 and 'aria-label="generate a check"' in form.text
    token = _csrf(form.text)
    fields = {"description": "The answer is polite.", "output_data_type": "bool"}
    assert api.client.post("/ui/checks/generate", data=fields).status_code == 403
    bad = api.client.post(
        "/ui/checks/generate", data={**fields, "csrf": token, "examples": '{"row": 1}'}
    )
    assert bad.status_code == 422 and "example on line 1" in bad.text
    assert fake_llm.requests == []  # refused before any LLM call
    fake_llm.error(500)
    down = api.client.post("/ui/checks/generate", data={**fields, "csrf": token})
    assert down.status_code == 502, down.text
    assert 'role="alert"' in down.text and "The answer is polite." in down.text
    assert len(fake_llm.requests) == 1


def _finished_run(api: Api, outputs: list[str], explanations: list[str]) -> str:
    """A succeeded one-check run of ``outputs`` stored with one ok result a row."""
    from engine.contract import Status
    from engine.models import RowResult
    from engine.storage import RunStatus, new_id

    tenant = api.store.create_tenant(new_id("search"))
    run = replace(queued_run(tenant.id, len(outputs)), status=RunStatus.SUCCEEDED)
    api.store.create_run(run, ({"model_output": o} for o in outputs), None)
    api.store.save_results(
        run.id,
        [
            (0, i, RowResult(status=Status.OK, score=i / len(outputs), explanation=e))
            for i, e in enumerate(explanations)
        ],
    )
    return run.id


def test_text_search_reads_a_window_per_page_and_still_finds_every_match(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.web import table

    needles = {3, 4, 5, 29, 57}
    run_id = _finished_run(
        api,
        [str(i) for i in range(60)],
        ["a needle here" if i in needles else "hay" for i in range(60)],
    )
    monkeypatch.setattr(table, "SEARCH_WINDOW", 10)
    for sort in table.SORTS:
        found: list[int] = []
        searched = 0
        cursor = None
        for _ in range(60):
            page = table.read_page(
                api.store.engine, run_id, table.TableFilter(text="needle", sort=sort), cursor, 2
            )
            assert len(page.rows) <= 2
            found += [r.row_index for r in page.rows]
            searched += page.searched is not None
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert sorted(found) == sorted(needles) and len(found) == len(needles), sort
        assert searched >= 3, sort  # the long stretches without a match were paged through
        if sort == "score_desc":
            assert found == sorted(needles, reverse=True)


def test_text_search_looks_at_the_model_output_ignores_case_and_takes_wildcards_literally(
    api: Api,
) -> None:
    from engine.web import table

    outputs = ["The Paris answer", "berlin", "100% sure", "1000 sure", "Zürich", "a_b", "axb"]
    run_id = _finished_run(api, outputs, ["fine"] * len(outputs))

    def found(text: str) -> list[int]:
        page = table.read_page(api.store.engine, run_id, table.TableFilter(text=text))
        return [r.row_index for r in page.rows]

    assert found("paris") == [0]  # only in the model output, and in another case
    assert found("BERLIN") == [1]
    assert found("0%") == [2]  # '%' is a character, not "anything"
    assert found("a_b") == [5]  # '_' is a character, not "any one"
    assert found("zürich") == [4]
    assert found("ZÜRICH") == [4]  # beyond ASCII too (SQLite's own lower() folds ASCII only)
    assert found("fine") == list(range(len(outputs)))  # the explanation still counts
    assert found("absent") == []


def test_the_run_page_shows_the_current_result_count_while_its_summary_is_kept(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.contract import Status
    from engine.models import RowResult
    from engine.runs import summary as summary_module
    from engine.storage import RunStatus
    from engine.tenancy.auth import create_tenant

    monkeypatch.setattr(summary_module, "STALE_FACTOR", 1e9)  # the kept summary is served
    made = create_tenant(api.store, "kept-summary")
    _sign_in(api, {"Authorization": f"Bearer {made.secret}"})
    run = queued_run(made.tenant.id, 10)
    api.store.create_run(run, ({"model_output": "x"} for _ in range(10)), None)
    api.store.set_run_status(run.id, RunStatus.RUNNING)

    def save(indices: range) -> None:
        ok = RowResult(status=Status.OK, score=0.5)
        api.store.save_results(run.id, [(0, i, ok) for i in indices])

    def shown() -> str:
        page = api.client.get(f"/ui/runs/{run.id}")
        assert page.status_code == 200, page.text
        found = re.search(r'data-field="done">(\d+)<', page.text)
        assert found is not None, page.text[:2000]
        return found.group(1)

    save(range(3))
    assert shown() == "3"
    save(range(3, 7))
    assert shown() == "7"  # the summary kept from the first view counted 3
